// Package argocd is Argosy's access to an Argo CD through the Kubernetes
// API: its resource kinds, server-side apply of desired state under a
// field manager with the hub's generation recorded on the object, the
// operations Argo CD runs, reading an Application's status into the wire
// types, and drift detection. It works on client-go's dynamic client and
// unstructured objects, so that nothing that imports it links Argo CD's own
// (large) module. It holds no agent logic: the agent (package spoke) and a
// hub-side mirror both build on it, and neither imports the other.
package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// Kinds of objects Argosy manages in an Argo CD.
const (
	KindApplication = "Application"
	KindAppProject  = "AppProject"
	// KindRepository is an Argo CD repository: a Secret labelled
	// argocd.argoproj.io/secret-type=repository, named
	// RepositorySecretPrefix and the repository's name.
	KindRepository = "Repository"
)

// conflictBackoff paces the retries of an update that lost a race with
// another writer of the object, mostly Argo CD's controller, which writes a
// new Application's status several times in its first second: 10 ms, then
// 50 ms, 250 ms and 1.25 s. client-go's DefaultRetry (five tries 10 ms
// apart) gave up while the controller was still writing.
var conflictBackoff = retry.DefaultBackoff

// RepositorySecretPrefix starts the name of every Secret the client writes
// or deletes for a repository. The Argo CD namespace holds Argo CD's own
// Secrets too (argocd-secret, cluster credentials); with the prefix, no
// repository event can name one of them. RBAC cannot confine a writer to
// a name prefix, so this is where it is enforced.
const RepositorySecretPrefix = "argosy-repo-"

// objectName is the name of ref's object in the cluster.
func objectName(ref Ref) string {
	if ref.Kind == KindRepository {
		return RepositorySecretPrefix + ref.Name
	}
	return ref.Name
}

// Ref names one object in an Argo CD.
type Ref struct {
	Kind      string
	Namespace string
	Name      string
}

// Object is desired state for one object.
type Object struct {
	Ref
	Labels      map[string]string
	Annotations map[string]string
	// Spec is the Argo CD spec (Application and AppProject).
	Spec json.RawMessage
	// Data is the Secret data of a repository.
	Data map[string]string
	// Generation is the hub's generation of the object; it is recorded on
	// the object as the argosy.dev/generation annotation.
	Generation int64
	// Adopt lets Apply take over, under KeepLocal, an object that exists
	// without the argosy.dev/managed label: it is updated in place, not
	// re-created, and is Argosy's from then on.
	Adopt bool
}

// Operation is a one-off action on an Application.
type Operation struct {
	// RequestID names the request the operation answers. A sync or a
	// rollback carries it in the operation's info (InfoRequest), where
	// Inspect finds it.
	RequestID string
	// Kind is sync, refresh, rollback or terminate (schemas.Operation*).
	Kind        string
	RequestedBy string
	Revision    string
	Prune       bool
	DryRun      bool
	// HistoryID is the status.history entry to roll back to.
	HistoryID int64
	// RefreshType is normal or hard.
	RefreshType string
}

// PermanentError marks a change that retrying cannot fix: the API server
// refused the object itself, or Argo CD would (an Application its
// AppProject does not permit).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// ConflictError marks a change refused because the object belongs to
// someone else: under KeepLocal, an object created in the cluster.
type ConflictError struct{ Err error }

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// Labels and annotations Argosy puts on what it manages.
const (
	LabelManaged         = "argosy.dev/managed"
	AnnotationGeneration = "argosy.dev/generation"
	// AnnotationCommitRevision and AnnotationCommitTime are the source
	// commit the hub's change deploys and when it was committed, where the
	// change said (schemas.ApplicationUpserted.Commit).
	AnnotationCommitRevision = "argosy.dev/commit-revision"
	AnnotationCommitTime     = "argosy.dev/commit-time"
	// InfoRequest is the name of the operation info entry that holds the
	// id of the request a sync or rollback answers.
	InfoRequest        = "argosy.dev/request"
	labelSecretType    = "argocd.argoproj.io/secret-type"
	annotationRefresh  = "argocd.argoproj.io/refresh"
	resourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
)

var (
	applicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appProjectGVR  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	secretGVR      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Client acts on one Argo CD through a Kubernetes API. It is safe for
// concurrent use.
type Client struct {
	dyn       dynamic.Interface
	manager   string
	keepLocal bool
}

// Option configures a Client.
type Option func(*Client)

// KeepLocal makes Apply and Delete refuse, with a ConflictError, to take
// over or delete an object that exists without the argosy.dev/managed
// label: in an agent's autonomous mode, Applications created in the
// cluster belong to the cluster, and the hub never overwrites them unless
// it adopts them (Object.Adopt).
func KeepLocal() Option { return func(a *Client) { a.keepLocal = true } }

// New returns a Client that acts through dyn and owns the fields it
// applies as fieldManager.
func New(dyn dynamic.Interface, fieldManager string, opts ...Option) (*Client, error) {
	if dyn == nil || fieldManager == "" {
		return nil, errors.New("argocd: a dynamic client and a field manager are required")
	}
	a := &Client{dyn: dyn, manager: fieldManager}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

func (a *Client) resource(kind, ns string) (dynamic.ResourceInterface, error) {
	switch kind {
	case KindApplication:
		return a.dyn.Resource(applicationGVR).Namespace(ns), nil
	case KindAppProject:
		return a.dyn.Resource(appProjectGVR).Namespace(ns), nil
	case KindRepository:
		return a.dyn.Resource(secretGVR).Namespace(ns), nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// Apply creates or updates obj with server-side apply under the client's
// field manager, forcing conflicts: the desired spec is the whole spec, so
// spec fields another manager set are put back too. An Application is
// first checked against its AppProject (CheckProject): one that Argo CD
// would not run is refused with a PermanentError and not written.
func (a *Client) Apply(ctx context.Context, obj *Object) error {
	ri, err := a.resource(obj.Kind, obj.Namespace)
	if err != nil {
		return err
	}
	u, err := unstructuredOf(obj)
	if err != nil {
		return err
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	if !obj.Adopt {
		if err := a.checkOwner(ctx, ri, obj.Ref); err != nil {
			return err
		}
	}
	if obj.Kind == KindApplication {
		if err := a.checkProject(ctx, obj); err != nil {
			return err // Argo CD would not run it: nothing is written
		}
	}
	force := true
	got, err := ri.Patch(ctx, objectName(obj.Ref), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: a.manager, Force: &force})
	if err != nil {
		err = fmt.Errorf("apply %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return &PermanentError{Err: err} // the object itself is wrong
		}
		return err
	}
	if _, ok := u.Object["spec"]; ok {
		// Server-side apply keeps spec fields that another manager set (a
		// local kubectl edit); the desired spec is the whole spec.
		if _, _, err := a.putBack(ctx, ri, got, obj.Spec); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
		}
	}
	return nil
}

// checkOwner refuses, under KeepLocal, to touch an existing object that
// Argosy does not manage. A repository's Secret is Argosy's by its name,
// and the agent may not read Secrets.
func (a *Client) checkOwner(ctx context.Context, ri dynamic.ResourceInterface, ref Ref) error {
	if !a.keepLocal || ref.Kind == KindRepository {
		return nil
	}
	cur, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	case cur.GetLabels()[LabelManaged] != "true":
		return &ConflictError{Err: fmt.Errorf("%s %s/%s was created in the cluster and belongs to it (autonomous mode)",
			ref.Kind, ref.Namespace, ref.Name)}
	}
	return nil
}

func unstructuredOf(obj *Object) (*unstructured.Unstructured, error) {
	labels := map[string]any{LabelManaged: "true"}
	for k, v := range obj.Labels {
		labels[k] = v
	}
	annotations := map[string]any{AnnotationGeneration: strconv.FormatInt(obj.Generation, 10)}
	for k, v := range obj.Annotations {
		annotations[k] = v
	}
	meta := map[string]any{"name": objectName(obj.Ref), "namespace": obj.Namespace, "labels": labels, "annotations": annotations}
	u := map[string]any{"metadata": meta}
	switch obj.Kind {
	case KindApplication, KindAppProject:
		u["apiVersion"], u["kind"] = "argoproj.io/v1alpha1", obj.Kind
		var spec map[string]any
		if err := json.Unmarshal(obj.Spec, &spec); err != nil || spec == nil {
			return nil, &PermanentError{Err: fmt.Errorf("%s %s/%s: spec is not a JSON object: %w", obj.Kind, obj.Namespace, obj.Name,
				errors.Join(err, errors.New("null")))}
		}
		u["spec"] = spec
	case KindRepository:
		u["apiVersion"], u["kind"] = "v1", "Secret"
		labels[labelSecretType] = "repository"
		data := map[string]any{}
		for k, v := range obj.Data {
			data[k] = v
		}
		u["stringData"] = data
	}
	return &unstructured.Unstructured{Object: u}, nil
}

// Delete removes the object; for an Application, cascade also deletes the
// resources Argo CD created for it. A missing object is already deleted.
func (a *Client) Delete(ctx context.Context, ref Ref, cascade bool) error {
	ri, err := a.resource(ref.Kind, ref.Namespace)
	if err != nil {
		return err
	}
	if err := a.checkOwner(ctx, ri, ref); err != nil {
		return err
	}
	if ref.Kind == KindApplication {
		// Argo CD deletes an Application's resources only while its
		// resources finalizer is set. Its controller writes the
		// Application too, so a conflict is read again and retried.
		if err := retry.RetryOnConflict(conflictBackoff, func() error {
			return a.setFinalizer(ctx, ri, ref.Name, cascade)
		}); err != nil {
			return fmt.Errorf("delete %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
	}
	policy := metav1.DeletePropagationForeground
	err = ri.Delete(ctx, objectName(ref), metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return nil
}

func (a *Client) setFinalizer(ctx context.Context, ri dynamic.ResourceInterface, name string, on bool) error {
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var fins []string
	for _, f := range u.GetFinalizers() {
		if f != resourcesFinalizer {
			fins = append(fins, f)
		}
	}
	if on {
		fins = append(fins, resourcesFinalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins, "resourceVersion": u.GetResourceVersion()}})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
