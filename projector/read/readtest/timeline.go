package readtest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// PlacementEdit is an audit history as the store joins it: alice applies
// generation 4 of the placement argocd/guestbook, which the hub places on
// n clusters (c00, c01, …) through one call per two clusters' partition,
// via the placer; the first two clusters reject it, the last has not
// answered, the others applied it. Then bob reads the clusters twice, and
// mallory is denied a placement. Entries are newest first.
func PlacementEdit(n int) *Query {
	t0 := Now().Add(-time.Hour)
	pl := &schemas.PlacementRef{Namespace: "argocd", Name: "guestbook", Generation: 4}
	call := func(off int64, at time.Time, id, actor, action, outcome, via string, p *schemas.PlacementRef, events ...string) projector.AuditRow {
		rec, _ := json.Marshal(schemas.AuditRecorded{RequestID: id, Actor: actor, Action: action, Outcome: outcome, EventIDs: events,
			Via: via, Placement: p})
		return projector.AuditRow{AuditEntry: projector.AuditEntry{Topic: "argosy.audit", Offset: off, At: at, EventID: "rec-" + id,
			Type: "io.argosy.hub.audit.recorded.v1", Kind: "api", Name: action, Actor: actor, After: rec},
			RequestID: id, Via: via, Placement: p}
	}
	var rows []projector.AuditRow
	rows = append(rows, call(0, t0, "apply", "alice", "placements.apply", "allowed", "", pl, "placement-4"))
	var placed []string
	for i := range n {
		c := fmt.Sprintf("c%02d", i)
		id := "ev-" + c
		placed = append(placed, id)
		at := t0.Add(time.Duration(i+1) * time.Millisecond)
		r := projector.AuditRow{AuditEntry: projector.AuditEntry{Topic: "argosy.config", Partition: int32(i % 2), Offset: int64(i / 2),
			At: at, EventID: id, Type: "io.argosy.config.application.upserted.v1", Cluster: c, Kind: schemas.SubjectApplications,
			Namespace: "argocd", Name: "guestbook", Generation: 2, Actor: "alice",
			Before: json.RawMessage(`{"project":"web","rev":"3"}`), After: json.RawMessage(`{"project":"web","rev":"4"}`)},
			RequestID: "place", Via: schemas.ViaPlacement, Placement: pl}
		switch {
		case i < 2:
			r.Results = []projector.Ack{{EventID: id, Cluster: c, Code: schemas.RejectInvalid, Reason: "no", At: at.Add(time.Second)}}
		case i < n-1:
			r.Results = []projector.Ack{{EventID: id, Cluster: c, Applied: true, At: at.Add(time.Second)}}
		}
		rows = append(rows, r)
	}
	end := t0.Add(time.Second)
	rows = append(rows, call(1, end, "place", "alice", "placements.reconcile", "allowed", schemas.ViaPlacement, pl, placed...))
	for i := range 2 {
		rows = append(rows, call(int64(2+i), end.Add(time.Duration(i+1)*time.Minute), fmt.Sprintf("read-%d", i), "bob", "read", "allowed", "", nil))
	}
	rows = append(rows, call(4, end.Add(10*time.Minute), "denied", "mallory", "placements.apply", "denied", "", nil))
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return &Query{AuditRows: rows}
}
