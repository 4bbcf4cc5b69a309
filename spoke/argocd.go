package spoke

import (
	"context"

	"github.com/argosyproj/argosy/internal/argocd"
)

// ArgoCD is everything the agent does to the local Argo CD. The real one is
// internal/argocd's Client, on the Kubernetes API; a simulation can stand in
// for it (argosy dev, the fleet benchmark) while the rest of the agent stays
// the same code.
type ArgoCD interface {
	// Apply creates or updates obj with server-side apply under the agent's
	// field manager.
	Apply(ctx context.Context, obj *Object) error
	// Delete removes the object; for an Application, cascade also deletes
	// the resources Argo CD created for it.
	Delete(ctx context.Context, ref Ref, cascade bool) error
	// Operate runs an operation on an Application through Argo CD's own
	// mechanisms: the operation field and the refresh annotation.
	Operate(ctx context.Context, ref Ref, op Operation) error
}

// Operations is the part of an ArgoCD that runs syncs and rollbacks the
// way Argo CD does: one at a time per Application, each recorded with the
// request it answers. internal/argocd's Client and the simulated Argo CD
// are ones; with it, the Operator starts an operation only when Argo CD is
// free, and acknowledges it when Argo CD takes it and when it ends.
type Operations interface {
	// Inspect reads where the operation answering requestID stands.
	Inspect(ctx context.Context, ref Ref, requestID string) (OperationState, error)
	// Start puts op on the Application if it is still at version, as
	// Inspect read it; otherwise it returns an error that wraps
	// ErrChanged and starts nothing.
	Start(ctx context.Context, ref Ref, op Operation, version string) error
	// Withdraw takes a request that Argo CD has not taken back out of the
	// Application, if it is still at version; otherwise it returns an
	// error that wraps ErrChanged.
	Withdraw(ctx context.Context, ref Ref, requestID, version string) error
}

// ErrChanged is Operations.Start's error when the Application changed
// since it was inspected.
var ErrChanged = argocd.ErrChanged

// The types of the ArgoCD seam are internal/argocd's, named here so that
// the agent's API reads on its own.
type (
	// Ref names one object in the local Argo CD.
	Ref = argocd.Ref
	// Object is desired state for one object.
	Object = argocd.Object
	// Operation is a one-off action on an Application.
	Operation = argocd.Operation
	// OperationState is where one operation stands on an Application.
	OperationState = argocd.OperationState
	// PermanentError marks an apply failure that retrying cannot fix
	// (the API server refused the object, or Argo CD would).
	PermanentError = argocd.PermanentError
	// ConflictError marks a change refused because the object belongs
	// to someone else: in autonomous mode, an Application created in the
	// cluster.
	ConflictError = argocd.ConflictError
)

// Kinds of objects the agent manages.
const (
	KindApplication = argocd.KindApplication
	KindAppProject  = argocd.KindAppProject
	KindRepository  = argocd.KindRepository
)

// FieldManager owns the fields the agent applies.
const FieldManager = "argosy-spoke"
