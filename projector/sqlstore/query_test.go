package sqlstore

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

func testClusters(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	c1 := projector.ClusterRow{Name: "c1", Registration: &f.Registrations[0], Beat: &f.Beats[0], Applications: 1}
	c2 := projector.ClusterRow{Name: "c2", Registration: &f.Registrations[1], Applications: 1}
	c3 := projector.ClusterRow{Name: "c3", Beat: &f.Beats[1]}
	got, err := s.Clusters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]projector.ClusterRow{c1, c2, c3}, got); diff != "" {
		t.Errorf("Clusters (-want +got):\n%s", diff)
	}
	sums, err := s.ClusterSummaries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantSums := []projector.ClusterSummary{
		{Name: "c1", Registration: &f.Registrations[0], HeartbeatAt: f.Beats[0].At, ConfigLag: f.Beats[0].ConfigLag, Applications: f.Beats[0].Applications},
		{Name: "c2", Registration: &f.Registrations[1]},
		{Name: "c3", HeartbeatAt: f.Beats[1].At, ConfigLag: f.Beats[1].ConfigLag, Applications: f.Beats[1].Applications},
	}
	if diff := cmp.Diff(wantSums, sums); diff != "" {
		t.Errorf("ClusterSummaries (-want +got):\n%s", diff)
	}
	tests := []struct {
		name, cluster string
		want          projector.ClusterRow
		wantOK        bool
	}{
		{"registered and beating", "c1", c1, true},
		{"registered", "c2", c2, true},
		{"beating", "c3", c3, true},
		{"unknown", "nope", projector.ClusterRow{}, false},
		{"empty name", "", projector.ClusterRow{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := s.Cluster(t.Context(), tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Errorf("Cluster(%q) found = %v, want %v", tc.cluster, ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Cluster(%q) (-want +got):\n%s", tc.cluster, diff)
			}
		})
	}
}

func testApps(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	a1 := projector.AppRow{AppKey: f.Desired[0].AppKey, Desired: &f.Desired[0], Observed: &f.Observed[0]}
	a2 := projector.AppRow{AppKey: f.Desired[1].AppKey, Desired: &f.Desired[1]}
	a3 := projector.AppRow{AppKey: f.Desired[2].AppKey, Desired: &f.Desired[2]}
	x := projector.AppRow{AppKey: f.Observed[1].AppKey, Observed: &f.Observed[1]}
	tests := []struct {
		name string
		f    projector.AppFilter
		want []projector.AppRow
	}{
		{"all", projector.AppFilter{}, []projector.AppRow{a1, a2, a3, x}},
		{"cluster", projector.AppFilter{Cluster: "c1"}, []projector.AppRow{a1, a2}},
		{"observed only", projector.AppFilter{Cluster: "c3"}, []projector.AppRow{x}},
		{"namespace", projector.AppFilter{Namespace: "default"}, []projector.AppRow{x}},
		{"name", projector.AppFilter{Name: "a3"}, []projector.AppRow{a3}},
		{"all three", projector.AppFilter{Cluster: "c1", Namespace: "argocd", Name: "a1"}, []projector.AppRow{a1}},
		{"none", projector.AppFilter{Cluster: "c2", Name: "a1"}, nil},
		{"brief", projector.AppFilter{Cluster: "c1", Brief: true}, []projector.AppRow{brief(a1), brief(a2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Apps(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Apps(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

// brief is a without what a brief listing leaves out.
func brief(a projector.AppRow) projector.AppRow {
	if d := a.Desired; d != nil {
		d2 := *d
		d2.Spec = nil
		a.Desired = &d2
	}
	if o := a.Observed; o != nil {
		o2 := *o
		o2.Conditions, o2.Resources, o2.Local = nil, nil, nil
		a.Observed = &o2
	}
	return a
}

func testAudit(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	// The config changes e1 and e2 get alice, whose call appended them;
	// the API call e5 has its own actor.
	// They name alice's call, r1, and what it was via and for; e5 its own.
	pl := &schemas.PlacementRef{Namespace: "argocd", Name: "a1", Generation: 3}
	e1 := projector.AuditRow{AuditEntry: f.Audit[0], RequestID: "r1", Via: schemas.ViaPlacement, Placement: pl}
	e1.Actor = "alice"
	e2 := projector.AuditRow{AuditEntry: f.Audit[1], Results: []projector.Ack{f.Acks[1], f.Acks[0]}, RequestID: "r1",
		Via: schemas.ViaPlacement, Placement: pl}
	e2.Actor = "alice"
	e5 := projector.AuditRow{AuditEntry: f.Audit[2], RequestID: "r2"}
	// e2 appended again and refused: the actor of e2, and no results,
	// since e2's acks are the change's.
	replay := projector.AuditRow{AuditEntry: f.Audit[3], RequestID: "r1", Via: schemas.ViaPlacement, Placement: pl}
	replay.Actor = "alice"
	tests := []struct {
		name string
		f    projector.AuditFilter
		want []projector.AuditRow
	}{
		{"all, newest first", projector.AuditFilter{}, []projector.AuditRow{replay, e2, e5, e1}},
		{"limit", projector.AuditFilter{Limit: 2}, []projector.AuditRow{replay, e2}},
		{"cluster", projector.AuditFilter{Cluster: "c1"}, []projector.AuditRow{replay, e2, e1}},
		{"namespace and name", projector.AuditFilter{Namespace: "argocd", Name: "a1"}, []projector.AuditRow{replay, e2, e1}},
		{"joined actor", projector.AuditFilter{Actor: "alice"}, []projector.AuditRow{replay, e2, e1}},
		{"own actor", projector.AuditFilter{Actor: "bob"}, []projector.AuditRow{e5}},
		{"actor and limit", projector.AuditFilter{Actor: "alice", Limit: 1}, []projector.AuditRow{replay}},
		{"from, inclusive", projector.AuditFilter{From: f.Audit[2].At}, []projector.AuditRow{replay, e2, e5}},
		{"to, exclusive", projector.AuditFilter{To: f.Audit[2].At}, []projector.AuditRow{e1}},
		{"span", projector.AuditFilter{From: day(3, 0), To: day(5, 0)}, []projector.AuditRow{e2, e5}},
		{"no match", projector.AuditFilter{Actor: "carol"}, nil},
		// e5, a call allowed that appended nothing (a read), is no change.
		{"changes", projector.AuditFilter{Changes: true}, []projector.AuditRow{replay, e2, e1}},
		{"changes by bob", projector.AuditFilter{Changes: true, Actor: "bob"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Audit(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Audit(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

func testChain(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	parts, err := s.ChainPartitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]projector.Partition{pAudit0, pConfig0}, parts); diff != "" {
		t.Errorf("ChainPartitions (-want +got):\n%s", diff)
	}
	tests := []struct {
		name  string
		p     projector.Partition
		after int64
		limit int
		want  []projector.AuditEntry
	}{
		{"all", pConfig0, -1, 0, []projector.AuditEntry{f.Audit[0], f.Audit[1], f.Audit[3]}},
		{"after", pConfig0, 1, 0, []projector.AuditEntry{f.Audit[1], f.Audit[3]}},
		{"limit", pConfig0, -1, 1, f.Audit[:1]},
		{"past the end", pConfig0, 3, 10, nil},
		{"other partition", pAudit0, -1, 0, f.Audit[2:3]},
		{"no entries", pStatus0, -1, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Chain(t.Context(), tc.p, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Chain (-want +got):\n%s", diff)
			}
		})
	}
}

func testDeployments(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	d1, d2, d3 := f.Deployments[0], f.Deployments[1], f.Deployments[2]
	tests := []struct {
		name string
		f    projector.DeploymentFilter
		want []projector.Deployment
	}{
		{"all, by finish time", projector.DeploymentFilter{}, []projector.Deployment{d1, d2, d3}},
		{"project", projector.DeploymentFilter{Project: "p1"}, []projector.Deployment{d1, d3}},
		{"cluster", projector.DeploymentFilter{Cluster: "c1"}, []projector.Deployment{d1, d2}},
		{"cluster and project", projector.DeploymentFilter{Cluster: "c1", Project: "p1"}, []projector.Deployment{d1}},
		{"namespace and name", projector.DeploymentFilter{Namespace: "argocd", Name: "app-d2"}, []projector.Deployment{d2}},
		{"from, inclusive", projector.DeploymentFilter{From: d2.FinishedAt}, []projector.Deployment{d2, d3}},
		{"to, exclusive", projector.DeploymentFilter{To: d2.FinishedAt}, []projector.Deployment{d1}},
		{"project and window", projector.DeploymentFilter{Project: "p1", From: day(4, 0), To: day(31, 0)},
			[]projector.Deployment{d3}},
		{"none", projector.DeploymentFilter{Project: "p9"}, nil},
		{"the last two, by finish time", projector.DeploymentFilter{Last: 2}, []projector.Deployment{d2, d3}},
		{"the last of a cluster", projector.DeploymentFilter{Cluster: "c1", Last: 1}, []projector.Deployment{d2}},
		{"more than there are", projector.DeploymentFilter{Project: "p1", Last: 9}, []projector.Deployment{d1, d3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Deployments(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Deployments(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

func testGaps(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	g1, g2 := f.Gaps[0], f.Gaps[1]
	tests := []struct {
		name string
		f    projector.DeploymentFilter
		want []projector.Gap
	}{
		{"all, by time", projector.DeploymentFilter{}, []projector.Gap{g1, g2}},
		{"cluster", projector.DeploymentFilter{Cluster: "c2"}, []projector.Gap{g2}},
		{"project is not looked at", projector.DeploymentFilter{Project: "p1"}, []projector.Gap{g1, g2}},
		{"name", projector.DeploymentFilter{Name: "a1"}, []projector.Gap{g1}},
		{"window", projector.DeploymentFilter{From: day(4, 0), To: day(7, 0)}, []projector.Gap{g2}},
		{"none", projector.DeploymentFilter{Cluster: "c9"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Gaps(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Gaps(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

func testTargets(t *testing.T, b backend) {
	s := b.fresh(t)
	f := fixture()
	commit(t, s, f)
	t1, t2, t3 := f.Targets[0], f.Targets[1], f.Targets[2]
	tests := []struct {
		name string
		f    projector.DeploymentFilter
		want []projector.Target
	}{
		{"all, by time", projector.DeploymentFilter{}, []projector.Target{t1, t2, t3}},
		{"one placement", projector.DeploymentFilter{Namespace: "argocd", Name: "web"}, []projector.Target{t1, t2}},
		{"cluster", projector.DeploymentFilter{Cluster: "c1"}, []projector.Target{t1, t3}},
		{"from, inclusive, to, exclusive", projector.DeploymentFilter{From: t2.At, To: t3.At}, []projector.Target{t2}},
		{"project is not looked at", projector.DeploymentFilter{Project: "p9"}, []projector.Target{t1, t2, t3}},
		{"none", projector.DeploymentFilter{Name: "nope"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Targets(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Targets(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

// testCallRecordsMigrated opens a store that version 11 folded: its API
// calls' records are mapped to their calls by the migration, and a call
// that appended events counts as a change, so the history of changes is
// the same as a store folded now gives.
func testCallRecordsMigrated(t *testing.T, b backend) {
	loc := b.database(t)
	s, err := b.unmigrated(loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.migrateTo(t.Context(), 11); err != nil {
		t.Fatal(err)
	}
	write := &projector.Batch{Audit: []projector.AuditEntry{
		{Topic: pAudit0.Topic, Offset: 0, At: day(3, 1), EventID: "rec-read", Type: "t.audit", Kind: "api", Name: "apps.list",
			Actor: "bob", After: json.RawMessage(`{"requestId":"r-read","outcome":"allowed"}`), Hash: "h1"},
		{Topic: pAudit0.Topic, Offset: 1, At: day(3, 2), EventID: "rec-write", Type: "t.audit", Kind: "api", Name: "apps.update",
			Actor: "alice", After: json.RawMessage(`{"requestId":"r-write","outcome":"allowed","eventIds":["e1"]}`), PrevHash: "h1", Hash: "h2"},
		{Topic: pConfig0.Topic, Offset: 0, At: day(3, 3), EventID: "e1", Type: "t.upserted", Cluster: "c1", Kind: "applications",
			Namespace: "argocd", Name: "a1", Generation: 1, After: json.RawMessage(`{}`), Hash: "h3"},
	}}
	tx, err := s.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := each(write.Audit, auditRow)
	if err != nil {
		t.Fatal(err)
	}
	calls := [][]any{{"r-read", "bob", "apps.list", "allowed", day(3, 1).UnixNano(), "[]"},
		{"r-write", "alice", "apps.update", "allowed", day(3, 2).UnixNano(), `["e1"]`}}
	err = errors.Join(s.upsert(t.Context(), tx, auditTable, rows),
		s.upsert(t.Context(), tx, table{name: "calls", cols: callColumns[:6], keys: 1}, calls),
		s.upsert(t.Context(), tx, callEventsTable, [][]any{{"e1", "r-write"}}))
	if err != nil {
		t.Fatal(errors.Join(err, tx.Rollback()))
	}
	if err := errors.Join(tx.Commit(), s.Close()); err != nil {
		t.Fatal(err)
	}
	s = b.store(t, loc)
	got, err := s.Audit(t.Context(), projector.AuditFilter{Changes: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.EventID+" "+r.RequestID)
	}
	if want := []string{"e1 r-write", "rec-write r-write"}; !slices.Equal(ids, want) {
		t.Errorf("changes after the migration %q, want %q", ids, want)
	}
}
