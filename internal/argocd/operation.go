package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/schemas"
)

// Operate runs an operation on an Application through Argo CD's own
// mechanisms: the operation field and the refresh annotation.
func (a *Client) Operate(ctx context.Context, ref Ref, op Operation) error {
	ri, err := a.resource(KindApplication, ref.Namespace)
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
	case schemas.OperationSync, schemas.OperationRollback:
		if patch, err = a.operationPatch(ctx, ri, ref, op); err != nil {
			return err
		}
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
func (a *Client) terminate(ctx context.Context, ri dynamic.ResourceInterface, ref Ref) error {
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

// operationPatch is the merge patch that puts the sync or rollback op in
// the Application's operation field.
func (a *Client) operationPatch(ctx context.Context, ri dynamic.ResourceInterface, ref Ref, op Operation) (map[string]any, error) {
	switch op.Kind {
	case schemas.OperationSync:
		return a.operation(op, map[string]any{"revision": op.Revision, "prune": op.Prune, "dryRun": op.DryRun}), nil
	case schemas.OperationRollback:
		sync, err := a.rollbackSync(ctx, ri, ref.Name, op.HistoryID)
		if err != nil {
			return nil, err
		}
		sync["prune"], sync["dryRun"] = op.Prune, op.DryRun
		return a.operation(op, sync), nil
	}
	return nil, &PermanentError{Err: fmt.Errorf("%q is not an operation Argo CD runs and records", op.Kind)}
}

func (a *Client) operation(op Operation, sync map[string]any) map[string]any {
	by := op.RequestedBy
	if by == "" {
		by = a.manager
	}
	o := map[string]any{"initiatedBy": map[string]any{"username": by}, "sync": sync}
	if op.RequestID != "" {
		o["info"] = []any{map[string]any{"name": InfoRequest, "value": op.RequestID}}
	}
	return map[string]any{"operation": o}
}

// rollbackSync returns the sync of a rollback to history entry id: its
// revision and source, as Argo CD's own rollback does.
func (a *Client) rollbackSync(ctx context.Context, ri dynamic.ResourceInterface, name string, id int64) (map[string]any, error) {
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
	return nil, &PermanentError{Err: fmt.Errorf("rollback %s: no history entry %d: Argo CD keeps the last revisionHistoryLimit entries", name, id)}
}

// ErrChanged means the Application changed since it was read: Start puts
// an operation only on the version of the Application it was decided on.
var ErrChanged = errors.New("the Application changed since it was read")

// OperationState is what an Application says about its operations, as far
// as one request is concerned.
type OperationState struct {
	// Version is the Application's resourceVersion as read: Start and
	// Withdraw write only on this version.
	Version string
	// Exists is false when there is no such Application.
	Exists bool
	// Busy means an operation waits for Argo CD's controller (the
	// operation field is set) or runs (its phase is Running or
	// Terminating). Argo CD runs one at a time, and its API refuses
	// another meanwhile.
	Busy bool
	// Waiting means the request is in the operation field: written, and
	// not yet taken by the controller.
	Waiting bool
	// Taken means the controller took the request: it is the operation
	// that runs or ran last (status.operationState).
	Taken bool
	// Ended means the request is the operation run last, and it ended:
	// Phase, Message and the rest are Argo CD's result.
	Ended      bool
	Phase      string
	Message    string
	Revision   string
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// Inspect reads the Application of ref and tells where the sync or
// rollback that answers requestID stands.
func (a *Client) Inspect(ctx context.Context, ref Ref, requestID string) (OperationState, error) {
	ri, err := a.resource(KindApplication, ref.Namespace)
	if err != nil {
		return OperationState{}, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return OperationState{}, nil
	}
	if err != nil {
		return OperationState{}, fmt.Errorf("application %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return inspect(u, requestID), nil
}

// inspect is Inspect on an Application already read.
func inspect(u *unstructured.Unstructured, requestID string) OperationState {
	st := OperationState{Version: u.GetResourceVersion(), Exists: true}
	waiting, _, _ := unstructured.NestedMap(u.Object, "operation")
	phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
	st.Busy = waiting != nil || phase == "Running" || phase == "Terminating"
	st.Waiting = waiting != nil && hasRequest(waiting, requestID)
	ran, _, _ := unstructured.NestedMap(u.Object, "status", "operationState", "operation")
	if ran == nil || !hasRequest(ran, requestID) {
		return st
	}
	st.Taken = true
	st.Phase = phase
	st.Message, _, _ = unstructured.NestedString(u.Object, "status", "operationState", "message")
	st.Revision, _, _ = unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
	state, _, _ := unstructured.NestedMap(u.Object, "status", "operationState")
	st.StartedAt, st.FinishedAt = timeOf(state, "startedAt"), timeOf(state, "finishedAt")
	st.Ended = phase != "" && phase != "Running" && phase != "Terminating"
	return st
}

func hasRequest(op map[string]any, requestID string) bool {
	infos, _, _ := unstructured.NestedSlice(op, "info")
	for _, i := range infos {
		if m, ok := i.(map[string]any); ok && m["name"] == InfoRequest && m["value"] == requestID {
			return true
		}
	}
	return false
}

// Withdraw takes the request out of the Application's operation field,
// where Argo CD's controller has not taken it, if the Application is still
// at version (as Inspect read it, Waiting): otherwise it returns
// ErrChanged and changes nothing.
func (a *Client) Withdraw(ctx context.Context, ref Ref, requestID, version string) error {
	ri, err := a.resource(KindApplication, ref.Namespace)
	if err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": version}, "operation": nil})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, ref.Name, types.MergePatchType, b, metav1.PatchOptions{})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("withdraw %s from %s/%s: %w", requestID, ref.Namespace, ref.Name, ErrChanged)
	case err != nil:
		return fmt.Errorf("withdraw %s from %s/%s: %w", requestID, ref.Namespace, ref.Name, err)
	}
	return nil
}

// timeOf is the time at field of m, or nil.
func timeOf(m map[string]any, field string) *time.Time {
	if t := timeAt(m, field); !t.IsZero() {
		return &t
	}
	return nil
}

// Start puts the sync or rollback op on the Application of ref for Argo
// CD's controller to run, in place of the last operation's state, only if
// the Application is still at version (as Inspect read it, and found it
// not Busy): otherwise it returns ErrChanged and puts nothing. The version
// is the fence that makes an operation start at most once, however many
// agents decided to start it.
func (a *Client) Start(ctx context.Context, ref Ref, op Operation, version string) error {
	ri, err := a.resource(KindApplication, ref.Namespace)
	if err != nil {
		return err
	}
	patch, err := a.operationPatch(ctx, ri, ref, op)
	if err != nil {
		return err
	}
	patch["metadata"] = map[string]any{"resourceVersion": version}
	// The last operation's state goes, as Argo CD's API server clears it
	// when it writes an operation: the controller merges the new one's
	// state into it, and would run this one with the last one's
	// initiator and retry (an automated sync's: retried 5 times).
	patch["status"] = map[string]any{"operationState": nil}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, ref.Name, types.MergePatchType, b, metav1.PatchOptions{})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s %s/%s: %w", op.Kind, ref.Namespace, ref.Name, ErrChanged)
	case apierrors.IsNotFound(err):
		return &PermanentError{Err: fmt.Errorf("%s %s/%s: no such Application", op.Kind, ref.Namespace, ref.Name)}
	case err != nil:
		return fmt.Errorf("%s %s/%s: %w", op.Kind, ref.Namespace, ref.Name, err)
	}
	return nil
}
