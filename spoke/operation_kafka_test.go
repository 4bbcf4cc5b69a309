//go:build integration

package spoke_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
)

// TestOldOperationsAreNotPerformed starts a new spoke over a history that
// holds operations asked for long ago: a sync whose event is an hour old
// and names no expiry, and one whose expiry has passed. Neither is
// performed; both were appended after they expired and are rejected as
// replays. A sync asked for now is.
func TestOldOperationsAreNotPerformed(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	old := w.operation(name, schemas.OperationSync, 0)
	old.SetTime(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	expired := w.operation(name, schemas.OperationRollback, 0)
	var p schemas.OperationRequested
	if err := expired.DataAs(&p); err != nil {
		t.Fatal(err)
	}
	p.RequestID, p.Operation, p.ExpiresAt = "req-expired", schemas.OperationSync, ptr(time.Now().Add(-time.Minute).UTC())
	if err := expired.SetData("application/json", p); err != nil {
		t.Fatal(err)
	}
	got := w.applyAllWithin(time.Minute, w.app(1), old, expired)
	for _, e := range []string{old.ID(), expired.ID()} {
		// Appended after they expired: by the log alone, copies.
		if got[e] != schemas.RejectReplay || !strings.Contains(w.reason(e), "expired") {
			t.Errorf("old operation %s: %q (%s), want %q for expiry", e, got[e], w.reason(e), schemas.RejectReplay)
		}
	}
	a, err := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if op, ok, _ := unstructured.NestedMap(a.Object, "operation"); ok {
		t.Errorf("an old operation reached the Application: %v", op)
	}
	if st, ok, _ := unstructured.NestedMap(a.Object, "status", "operationState"); ok {
		t.Errorf("an old operation ran: %v", st)
	}

	fresh := w.operation(name, schemas.OperationSync, 0)
	if got := w.applyAllWithin(time.Minute, fresh); got[fresh.ID()] != "applied" {
		t.Errorf("a sync asked for now: %q, want applied", got[fresh.ID()])
	}
	kubetest.WaitApplication(t, w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace), name,
		func(u *unstructured.Unstructured) bool {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
			return phase == "Succeeded"
		})
}

// TestRollbackToFirstDeployment rolls an Application back, through the
// agent and a real Argo CD, to history entry 0: Argo CD numbers its
// history from 0, so that is the first deployment. A rollback that names
// no history entry, which no hub writes, is rejected as invalid.
func TestRollbackToFirstDeployment(t *testing.T) {
	w := newWorld(t)
	rev1 := w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	synced := func(rev string) {
		t.Helper()
		kubetest.WaitApplication(t, apps, name, func(u *unstructured.Unstructured) bool {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
			got, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
			return phase == "Succeeded" && got == rev
		})
	}
	w.applyAllWithin(time.Minute, w.app(1), w.operation(name, schemas.OperationSync, 0))
	synced(rev1) // history entry 0
	rev2 := w.repo.Commit(t, "v2", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: two\n"})
	refresh := w.operation(name, schemas.OperationRefresh, 0)
	if err := setData(refresh, func(p *schemas.OperationRequested) { p.RefreshType = "hard" }); err != nil {
		t.Fatal(err)
	}
	w.applyAllWithin(time.Minute, refresh, w.operation(name, schemas.OperationSync, 0))
	synced(rev2) // history entry 1

	first := w.operation(name, schemas.OperationRollback, 0)
	unnamed := w.operation(name, schemas.OperationRollback, 0)
	if err := setData(unnamed, func(p *schemas.OperationRequested) { p.HistoryID = nil }); err != nil {
		t.Fatal(err)
	}
	got := w.applyAllWithin(time.Minute, first, unnamed)
	if got[first.ID()] != "applied" {
		t.Errorf("rollback to history entry 0: %q (%s), want applied", got[first.ID()], w.reason(first.ID()))
	}
	if got[unnamed.ID()] != schemas.RejectInvalid || !strings.Contains(w.reason(unnamed.ID()), "names no historyId") {
		t.Errorf("rollback naming no history entry: %q (%s), want %q", got[unnamed.ID()], w.reason(unnamed.ID()), schemas.RejectInvalid)
	}
	synced(rev1)
}

// setData edits the OperationRequested data of e.
func setData(e *event.Event, edit func(*schemas.OperationRequested)) error {
	var p schemas.OperationRequested
	if err := e.DataAs(&p); err != nil {
		return err
	}
	edit(&p)
	return e.SetData("application/json", p)
}

func ptr[T any](v T) *T { return &v }

// TestSyncAfterAnAutomatedOne: an Application whose last operation was
// Argo CD's own automated sync (initiated by the policy, retried up to 5
// times) is synced for a person. The operation Argo CD runs and records
// is that person's alone, as after a sync asked of Argo CD's API server,
// which clears the last operation's state as it writes the new one: not
// the automated one's initiator and retry merged into it.
func TestSyncAfterAnAutomatedOne(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	spec, _ := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns},
		"syncPolicy":  map[string]any{"automated": map[string]any{}}})
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	w.applyAllWithin(time.Minute, w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec}))
	kubetest.WaitApplication(t, apps, name, func(u *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		automated, _, _ := unstructured.NestedBool(u.Object, "status", "operationState", "operation", "initiatedBy", "automated")
		return phase == "Succeeded" && automated
	})

	sync := w.operation(name, schemas.OperationSync, 0)
	var id string
	if err := setData(sync, func(p *schemas.OperationRequested) { p.RequestedBy, id = "k8s:alice", p.RequestID }); err != nil {
		t.Fatal(err)
	}
	if got := w.applyAllWithin(time.Minute, sync); got[sync.ID()] != "applied" {
		t.Fatalf("the sync: %q (%s), want applied", got[sync.ID()], w.reason(sync.ID()))
	}
	var op map[string]any
	kubetest.WaitApplication(t, apps, name, func(u *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		op, _, _ = unstructured.NestedMap(u.Object, "status", "operationState", "operation")
		return phase == "Succeeded" && strings.Contains(fmt.Sprint(op["info"]), id)
	})
	if by := fmt.Sprint(op["initiatedBy"]); by != "map[username:k8s:alice]" {
		t.Errorf("the sync Argo CD ran was initiated by %s, want k8s:alice alone", by)
	}
	if retry, _ := op["retry"].(map[string]any); len(retry) > 0 { // Argo CD writes none as {}
		t.Errorf("the sync Argo CD ran retries %v, the automated sync's: want what was asked", retry)
	}
}
