//go:build integration

package hub_test

import (
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// TestRollbackToFirstHistoryEntry: Argo CD numbers its history from 0, so
// a rollback to entry 0, the first deployment, is accepted and its event
// carries historyId 0 on the wire; a sync carries none.
func TestRollbackToFirstHistoryEntry(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	r.register(root, "prod", nil)
	if _, err := root.Apply(t.Context(), api.KindAppProjects, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: projectManifest("web")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: appIn("guestbook", "web")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	first := int64(0)
	for _, req := range []api.OperationRequest{{Operation: schemas.OperationRollback, HistoryID: &first}, {Operation: schemas.OperationSync}} {
		if _, err := root.Operate(t.Context(), "prod", "argocd", "guestbook", req, api.WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", req.Operation, err)
		}
	}
	ops := ofType(r.decoded(r.records(events.TopicConfig)), events.TypeOperationRequested)
	if len(ops) != 2 {
		t.Fatalf("%d operation events, want 2", len(ops))
	}
	for _, d := range ops {
		p, ok := d.Data.(*schemas.OperationRequested)
		if !ok {
			t.Fatalf("%s: data %T", d.Event.ID(), d.Data)
		}
		raw := string(d.Event.Data())
		switch p.Operation {
		case schemas.OperationRollback:
			if p.HistoryID == nil || *p.HistoryID != 0 || !strings.Contains(raw, `"historyId":0`) {
				t.Errorf("rollback to the first entry: %s, want historyId 0", raw)
			}
		case schemas.OperationSync:
			if p.HistoryID != nil || strings.Contains(raw, "historyId") {
				t.Errorf("sync: %s, want no historyId", raw)
			}
		}
	}
}
