//go:build integration

package spoke_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

func ptr[T any](v T) *T { return &v }
