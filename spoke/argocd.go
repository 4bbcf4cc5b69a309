package spoke

import (
	"context"
	"encoding/json"
)

// ArgoCD is everything the spoke does to the local Argo CD. The real one
// (package spoke/kube) talks to the Kubernetes API with unstructured objects;
// a simulation can stand in for it (argosy dev, the fleet benchmark) while
// the rest of the spoke stays the same code.
type ArgoCD interface {
	// Apply creates or updates obj with server-side apply under the spoke's
	// field manager.
	Apply(ctx context.Context, obj *Object) error
	// Delete removes the object; for an Application, cascade also deletes
	// the resources Argo CD created for it.
	Delete(ctx context.Context, ref Ref, cascade bool) error
	// Operate runs an operation on an Application through Argo CD's own
	// mechanisms: the operation field and the refresh annotation.
	Operate(ctx context.Context, ref Ref, op Operation) error
}

// Kinds of objects the spoke manages.
const (
	KindApplication = "Application"
	KindAppProject  = "AppProject"
	// KindRepository is an Argo CD repository: a Secret labelled
	// argocd.argoproj.io/secret-type=repository.
	KindRepository = "Repository"
)

// Ref names one object in the local Argo CD.
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
}

// Operation is a one-off action on an Application.
type Operation struct {
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
