package sqlstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// placementEdit is the log of one placement change reaching 50 clusters,
// as the hub writes it: alice's call that applies generation 4, then the
// placer's Applications on two config partitions, each partition's with
// an audit record naming alice, via the placer; 47 clusters apply, 2
// reject, 1 has not answered. Then bob reads 30 times and mallory is
// denied once.
func placementEdit(t testing.TB) []*events.Decoded {
	var l eventLog
	at := func(i int) time.Time {
		return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	}
	pl := &schemas.PlacementRef{Namespace: "argocd", Name: "web", Generation: 4}
	l.add(t, pAudit0, at(0), events.TypeAuditRecorded, events.Subject{}, &schemas.AuditRecorded{RequestID: "apply", Actor: "alice",
		Action: "placements.apply", Method: "POST", Path: "/api/v1/placements", Outcome: "allowed", StatusCode: 200,
		EventIDs: []string{"placement-event"}, Placement: pl})
	ids := map[projector.Partition][]string{}
	spec := json.RawMessage(`{"source":{"repoURL":"https://git.example/r","path":"web"}}`)
	for i := range 50 {
		c := fmt.Sprintf("c%02d", i)
		p := []projector.Partition{pConfig0, pConfig1}[i%2]
		ids[p] = append(ids[p], l.add(t, p, at(10+i), events.TypeApplicationUpserted, app(c, "web"), &schemas.ApplicationUpserted{
			Resource: schemas.Resource{Cluster: c, Namespace: "argocd", Name: "web", Generation: 1}, Project: "default",
			Labels: map[string]string{schemas.LabelPlacement: "web", schemas.LabelPlacementGeneration: "4"}, Spec: spec}))
	}
	for _, p := range []projector.Partition{pConfig0, pConfig1} {
		l.add(t, pAudit0, at(70), events.TypeAuditRecorded, events.Subject{}, &schemas.AuditRecorded{RequestID: "place", Actor: "alice",
			Action: "placements.reconcile", Method: "PLACE", Path: "/api/v1/placements/argocd/web", Outcome: "allowed",
			StatusCode: 200, EventIDs: ids[p], Via: schemas.ViaPlacement, Placement: pl})
	}
	for i := range 49 {
		c := fmt.Sprintf("c%02d", i)
		id := ids[[]projector.Partition{pConfig0, pConfig1}[i%2]][i/2]
		res := schemas.Resource{Cluster: c, Namespace: "argocd", Name: "web", Generation: 1}
		if i < 2 {
			l.add(t, pStatus0, at(100+i), events.TypeConfigRejected, app(c, "web"), &schemas.ConfigRejected{Resource: res, EventID: id,
				Code: "invalid", Reason: "no"})
			continue
		}
		l.add(t, pStatus0, at(100+i), events.TypeConfigApplied, app(c, "web"), &schemas.ConfigApplied{Resource: res, EventID: id})
	}
	for i := range 30 {
		l.add(t, pAudit0, at(200+i), events.TypeAuditRecorded, events.Subject{}, &schemas.AuditRecorded{RequestID: fmt.Sprintf("read-%d", i),
			Actor: "bob", Action: "clusters.list", Method: "GET", Path: "/api/v1/clusters", Outcome: "allowed", StatusCode: 200})
	}
	l.add(t, pAudit0, at(300), events.TypeAuditRecorded, events.Subject{}, &schemas.AuditRecorded{RequestID: "denied",
		Actor: "mallory", Action: "placements.apply", Method: "POST", Path: "/api/v1/placements", Outcome: "denied", StatusCode: 403})
	return l.out
}

// testTimelineFoldsAPlacement checks the audit timeline over a stored
// fold: one placement edit on 50 clusters is one action, alice's, with
// its results counted and its spec once; reads are left out unless asked
// for, and the denial stays.
func testTimelineFoldsAPlacement(t *testing.T, b backend) {
	s := b.fresh(t)
	batch, _ := foldInMemory(t, placementEdit(t))
	commit(t, s, batch)
	type action struct {
		Actor, Via, Action, Outcome, Name string
		Clusters, Entries                 int
		Results                           read.Tally
		Spec                              bool
	}
	summary := func(as []read.Action) []action {
		var out []action
		for _, a := range as {
			out = append(out, action{a.Actor, a.Via, a.Action, a.Outcome, a.Name, a.Clusters, len(a.Entries), a.Results, a.After != nil})
		}
		return out
	}
	denied := action{Actor: "mallory", Action: "placements.apply", Outcome: "denied", Name: "placements.apply", Entries: 1}
	edit := action{Actor: "alice", Action: "placements.apply", Outcome: "allowed", Name: "web", Clusters: 50, Entries: 53,
		Results: read.Tally{Applied: 47, Failed: 2, Pending: 1}, Spec: true}
	read1 := action{Actor: "bob", Action: "clusters.list", Outcome: "allowed", Name: "clusters.list", Entries: 1}
	tests := []struct {
		name string
		f    read.TimelineFilter
		want []action
	}{
		{"changes and refusals", read.TimelineFilter{}, []action{denied, edit}},
		{"reads asked for", read.TimelineFilter{Reads: true, AuditFilter: projector.AuditFilter{Limit: 3}}, []action{denied, read1, read1}},
		{"reads, all of them", read.TimelineFilter{Reads: true, AuditFilter: projector.AuditFilter{Limit: 100}}, append(append(
			[]action{denied}, repeat(read1, 30)...), edit)},
		{"by application: the placer's calls are not about it, and name alice via the placer", read.TimelineFilter{
			AuditFilter: projector.AuditFilter{Name: "web"}},
			[]action{{Actor: "alice", Via: schemas.ViaPlacement, Name: "web", Clusters: 50, Entries: 50,
				Results: read.Tally{Applied: 47, Failed: 2, Pending: 1}, Spec: true}}},
		{"by actor", read.TimelineFilter{AuditFilter: projector.AuditFilter{Actor: "alice"}}, []action{edit}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := read.Timeline(t.Context(), s, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(got)); diff != "" {
				t.Errorf("Timeline(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}
