// Package kube is the spoke's real Argo CD: it implements spoke.ArgoCD with
// client-go's dynamic client and unstructured objects, so that the agent
// never links Argo CD's own (large) module.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// FieldManager owns the fields the spoke applies.
const FieldManager = "argosy-spoke"

// Labels and annotations the spoke puts on what it manages.
const (
	LabelManaged         = "argosy.dev/managed"
	AnnotationGeneration = "argosy.dev/generation"
	// AnnotationDesiredSpec holds the spec the hub wants, as canonical
	// JSON, so that the spoke can tell a local edit from desired state and
	// restore it, even while Kafka is unreachable.
	AnnotationDesiredSpec = "argosy.dev/desired-spec"
	labelSecretType       = "argocd.argoproj.io/secret-type"
	annotationRefresh     = "argocd.argoproj.io/refresh"
	resourcesFinalizer    = "resources-finalizer.argocd.argoproj.io"
)

var (
	applicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appProjectGVR  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	secretGVR      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// ArgoCD is the spoke's Argo CD on a Kubernetes API.
type ArgoCD struct {
	dyn       dynamic.Interface
	keepLocal bool
}

var (
	_ spoke.ArgoCD   = (*ArgoCD)(nil)
	_ spoke.Reverter = (*ArgoCD)(nil)
)

// Option configures an ArgoCD.
type Option func(*ArgoCD)

// KeepLocal makes Apply and Delete refuse, with a spoke.ConflictError, to
// take over or delete an object that exists without the argosy.dev/managed
// label: in autonomous mode, Applications created in the cluster belong to
// the cluster, and the hub never overwrites them.
func KeepLocal() Option { return func(a *ArgoCD) { a.keepLocal = true } }

// New returns an ArgoCD that acts through dyn.
func New(dyn dynamic.Interface, opts ...Option) *ArgoCD {
	a := &ArgoCD{dyn: dyn}
	for _, o := range opts {
		o(a)
	}
	return a
}

func (a *ArgoCD) resource(kind, ns string) (dynamic.ResourceInterface, error) {
	switch kind {
	case spoke.KindApplication:
		return a.dyn.Resource(applicationGVR).Namespace(ns), nil
	case spoke.KindAppProject:
		return a.dyn.Resource(appProjectGVR).Namespace(ns), nil
	case spoke.KindRepository:
		return a.dyn.Resource(secretGVR).Namespace(ns), nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// Apply implements spoke.ArgoCD.
func (a *ArgoCD) Apply(ctx context.Context, obj *spoke.Object) error {
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
	if err := a.checkOwner(ctx, ri, obj.Ref); err != nil {
		return err
	}
	force := true
	got, err := ri.Patch(ctx, obj.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		err = fmt.Errorf("apply %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return &spoke.PermanentError{Err: err} // the object itself is wrong
		}
		return err
	}
	if _, ok := u.Object["spec"]; ok {
		// Server-side apply keeps spec fields that another manager set (a
		// local kubectl edit); the desired spec is the whole spec.
		if _, err := a.restoreLatest(ctx, ri, got); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
		}
	}
	return nil
}

// checkOwner refuses, under KeepLocal, to touch an existing object that
// Argosy does not manage.
func (a *ArgoCD) checkOwner(ctx context.Context, ri dynamic.ResourceInterface, ref spoke.Ref) error {
	if !a.keepLocal {
		return nil
	}
	cur, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	case cur.GetLabels()[LabelManaged] != "true":
		return &spoke.ConflictError{Err: fmt.Errorf("%s %s/%s was created in the cluster and belongs to it (autonomous mode)",
			ref.Kind, ref.Namespace, ref.Name)}
	}
	return nil
}

func unstructuredOf(obj *spoke.Object) (*unstructured.Unstructured, error) {
	labels := map[string]any{LabelManaged: "true"}
	for k, v := range obj.Labels {
		labels[k] = v
	}
	annotations := map[string]any{AnnotationGeneration: strconv.FormatInt(obj.Generation, 10)}
	for k, v := range obj.Annotations {
		annotations[k] = v
	}
	meta := map[string]any{"name": obj.Name, "namespace": obj.Namespace, "labels": labels, "annotations": annotations}
	u := map[string]any{"metadata": meta}
	switch obj.Kind {
	case spoke.KindApplication, spoke.KindAppProject:
		u["apiVersion"], u["kind"] = "argoproj.io/v1alpha1", obj.Kind
		var spec map[string]any
		if err := json.Unmarshal(obj.Spec, &spec); err != nil || spec == nil {
			return nil, &spoke.PermanentError{Err: fmt.Errorf("%s %s/%s: spec is not a JSON object: %w", obj.Kind, obj.Namespace, obj.Name,
				errors.Join(err, errors.New("null")))}
		}
		desired, err := json.Marshal(spec) // canonical: sorted keys
		if err != nil {
			return nil, err
		}
		annotations[AnnotationDesiredSpec] = string(desired)
		u["spec"] = spec
	case spoke.KindRepository:
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

// Delete implements spoke.ArgoCD. A missing object is already deleted.
func (a *ArgoCD) Delete(ctx context.Context, ref spoke.Ref, cascade bool) error {
	ri, err := a.resource(ref.Kind, ref.Namespace)
	if err != nil {
		return err
	}
	if err := a.checkOwner(ctx, ri, ref); err != nil {
		return err
	}
	if ref.Kind == spoke.KindApplication {
		// Argo CD deletes an Application's resources only while its
		// resources finalizer is set.
		if err := a.setFinalizer(ctx, ri, ref.Name, cascade); err != nil {
			return err
		}
	}
	policy := metav1.DeletePropagationForeground
	err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return nil
}

func (a *ArgoCD) setFinalizer(ctx context.Context, ri dynamic.ResourceInterface, name string, on bool) error {
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

// Operate implements spoke.ArgoCD.
func (a *ArgoCD) Operate(ctx context.Context, ref spoke.Ref, op spoke.Operation) error {
	ri, err := a.resource(spoke.KindApplication, ref.Namespace)
	if err != nil {
		return err
	}
	var patch map[string]any
	switch op.Kind {
	case schemas.OperationRefresh:
		kind := op.RefreshType
		if kind == "" {
			kind = "normal"
		}
		patch = map[string]any{"metadata": map[string]any{"annotations": map[string]any{annotationRefresh: kind}}}
	case schemas.OperationSync:
		patch = operation(op, map[string]any{"revision": op.Revision, "prune": op.Prune, "dryRun": op.DryRun})
	case schemas.OperationRollback:
		sync, err := a.rollbackSync(ctx, ri, ref.Name, op.HistoryID)
		if err != nil {
			return err
		}
		sync["prune"], sync["dryRun"] = op.Prune, op.DryRun
		patch = operation(op, sync)
	case schemas.OperationTerminate:
		return a.terminate(ctx, ri, ref)
	default:
		return fmt.Errorf("unknown operation %q", op.Kind)
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, ref.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("%s %s/%s: %w", op.Kind, ref.Namespace, ref.Name, err)
	}
	return nil
}

// terminate does what `argocd app terminate-op` does: mark the running
// operation Terminating, with an update that fails on a concurrent write, so
// that the controller's own status writes cannot silently undo it. It
// returns once the operation is no longer Running, or errs (to be retried)
// after 30 s.
func (a *ArgoCD) terminate(ctx context.Context, ri dynamic.ResourceInterface, ref spoke.Ref) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("terminate %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		if phase != "Running" {
			return nil // nothing running, or already terminating or finished
		}
		if err := unstructured.SetNestedField(u.Object, "Terminating", "status", "operationState", "phase"); err != nil {
			return err
		}
		if _, err := ri.Update(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("terminate %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("terminate %s/%s: the operation is still running", ref.Namespace, ref.Name)
}

func operation(op spoke.Operation, sync map[string]any) map[string]any {
	by := op.RequestedBy
	if by == "" {
		by = FieldManager
	}
	return map[string]any{"operation": map[string]any{"initiatedBy": map[string]any{"username": by}, "sync": sync}}
}

// rollbackSync returns the sync of a rollback to history entry id: its
// revision and source, as Argo CD's own rollback does.
func (a *ArgoCD) rollbackSync(ctx context.Context, ri dynamic.ResourceInterface, name string, id int64) (map[string]any, error) {
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	hist, _, err := unstructured.NestedSlice(u.Object, "status", "history")
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		m, ok := h.(map[string]any)
		if !ok {
			continue
		}
		if hid, _, _ := unstructured.NestedInt64(m, "id"); hid == id {
			rev, _, _ := unstructured.NestedString(m, "revision")
			src, _, _ := unstructured.NestedMap(m, "source")
			return map[string]any{"revision": rev, "source": src}, nil
		}
	}
	return nil, errors.New("rollback: no history entry " + strconv.FormatInt(id, 10))
}
