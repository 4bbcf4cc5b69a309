package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// backend is one engine for the conformance suite.
type backend struct {
	// database returns the locator of a new, empty database.
	database func(t testing.TB) string
	open     func(ctx context.Context, loc string) (*Store, error)
	// unmigrated opens the database at loc and migrates nothing.
	unmigrated func(loc string) (*Store, error)
}

// store opens a handle on the database at loc, closed when the test ends.
func (b backend) store(t testing.TB, loc string) *Store {
	t.Helper()
	s, err := b.open(t.Context(), loc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// fresh opens a new, empty database.
func (b backend) fresh(t testing.TB) *Store {
	t.Helper()
	return b.store(t, b.database(t))
}

// testStore is the conformance suite every engine passes.
func testStore(t *testing.T, b backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"LoadMissing", testLoadMissing},
		{"Idempotent", testIdempotent},
		{"Offsets", testOffsets},
		{"StaleOffsetWritesNothing", testStaleOffsetWritesNothing},
		{"CompareAndSet", testCompareAndSet},
		{"TimeOutOfRange", testTimeOutOfRange},
		{"Reopen", testReopen},
		{"ConcurrentOpen", testConcurrentOpen},
		{"ConcurrentReplicas", testConcurrentReplicas},
		{"ConcurrentFence", testConcurrentFence},
		{"Clusters", testClusters},
		{"Backlogs", testBacklogs},
		{"Apps", testApps},
		{"Audit", testAudit},
		{"CallRecordsMigrated", testCallRecordsMigrated},
		{"TimelineFoldsAPlacement", testTimelineFoldsAPlacement},
		{"Chain", testChain},
		{"Deployments", testDeployments},
		{"Gaps", testGaps},
		{"Targets", testTargets},
		{"ChainVerifies", testChainVerifies},
		{"TamperDetected", testTamperDetected},
		{"FoldResumes", testFoldResumes},
		{"ReplaysRefusedAcrossSteps", testReplaysRefusedAcrossSteps},
		{"Rechain", testRechain},
		{"Diff", testDiff},
	}
	// These measure what the process allocates, so they run one at a
	// time, before the parallel tests start.
	alone := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"AppsBounded", testAppsBounded},
		{"AuditBounded", testAuditBounded},
	}
	for _, tc := range alone {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

// cet is a zone other than UTC: stores give times back in UTC, the same
// instants.
var cet = time.FixedZone("CET", 3600)

// day is a time on day d of March 2026, with nanoseconds ns.
func day(d, ns int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, ns, cet) }

func ptr[T any](v T) *T { return &v }

var (
	pConfig0 = projector.Partition{Topic: "argosy.config", Partition: 0}
	pConfig1 = projector.Partition{Topic: "argosy.config", Partition: 1}
	pStatus0 = projector.Partition{Topic: "argosy.status", Partition: 0}
	pDeploy0 = projector.Partition{Topic: "argosy.deployments", Partition: 0}
	pAudit0  = projector.Partition{Topic: "argosy.audit", Partition: 0}
)

func key(cluster, ns, name string) projector.AppKey {
	return projector.AppKey{Cluster: cluster, Namespace: ns, Name: name}
}

// fixture is a batch with rows in every table. Clusters: c1 is registered
// and beats, c2 is registered only, c3 beats only.
func fixture() *projector.Batch {
	finished := day(3, 999)
	return &projector.Batch{
		Offsets:    map[projector.Partition]int64{pConfig0: 10, pStatus0: 20, pDeploy0: 30, pAudit0: 5},
		ChainHeads: map[projector.Partition]string{pConfig0: "head-config-0", pAudit0: "head-audit-0"},
		Registrations: []projector.ClusterRegistration{
			{Cluster: "c1", Registered: true, Labels: map[string]string{"env": "prod"}, RegisteredAt: day(1, 1)},
			{Cluster: "c2", Registered: true, Labels: map[string]string{}, RegisteredAt: day(1, 2)},
		},
		Beats: []projector.ClusterBeat{
			{Cluster: "c1", Seq: 7, At: day(2, 123456789), AgentVersion: "v1", ArgoCDVersion: "v2.14", Mode: "managed",
				Applications: 2, BySync: map[string]int{"Synced": 2}, ByHealth: map[string]int{"Healthy": 1, "Degraded": 1},
				ConfigOffset: 9, ConfigLag: 1},
			{Cluster: "c3", Seq: 1, At: day(2, 5), AgentVersion: "v1", Mode: "autonomous"},
		},
		Desired: []projector.AppDesired{
			{AppKey: key("c1", "argocd", "a1"), Project: "p1", Labels: map[string]string{"team": "x"}, Generation: 2,
				Spec: json.RawMessage(`{"z": 1, "a": [1,2]}`), EventID: "e2", UpdatedAt: day(2, 7)},
			{AppKey: key("c1", "argocd", "a2"), Project: "p1", Generation: 3, Deleted: true, EventID: "e3", UpdatedAt: day(2, 8)},
			{AppKey: key("c2", "argocd", "a3"), Project: "p2", Generation: 1, Spec: json.RawMessage(`{}`), EventID: "e4",
				UpdatedAt: day(2, 9)},
		},
		Observed: []projector.AppObserved{
			{AppKey: key("c1", "argocd", "a1"), Seq: 5, Sync: &schemas.SyncStatus{Status: "Synced", Revision: "abc"},
				Health:            &schemas.HealthStatus{Status: "Degraded", Message: "pod crash"},
				Operation:         &schemas.OperationState{Phase: "Succeeded", StartedAt: day(2, 1), FinishedAt: &finished},
				Conditions:        []schemas.Condition{{Type: "SyncError", Message: "x"}},
				Resources:         &schemas.ResourceSummary{Total: 3, ByKind: map[string]int{"Deployment": 1}},
				AppliedGeneration: 2, Rejected: &projector.Rejection{Generation: 3, EventID: "e3", Code: "invalid"},
				Local: &projector.LocalApp{Project: "p3", Labels: map[string]string{"team": "edge"},
					Spec: json.RawMessage(`{"project":"p3"}`), Generation: 4, EventID: "e5", At: day(2, 12)},
				UpdatedAt: day(2, 10)},
			{AppKey: key("c3", "default", "x"), Seq: 1, Deleted: true, Conditions: []schemas.Condition{}, UpdatedAt: day(2, 11)},
		},
		Acks: []projector.Ack{
			{EventID: "e2", Cluster: "c1", Applied: true, At: day(2, 12)},
			{EventID: "e2", Cluster: "c0", Code: "invalid", Reason: "no", At: day(2, 13)},
			{EventID: "e9", Cluster: "c2", Applied: true},
		},
		Calls: []projector.Call{{RequestID: "r1", Actor: "alice", Action: "apps.update", Outcome: "allowed",
			At: day(2, 14), EventIDs: []string{"e1", "e2"}, Via: schemas.ViaPlacement, RecordID: "e6",
			Placement: &schemas.PlacementRef{Namespace: "argocd", Name: "a1", Generation: 3}},
			{RequestID: "r2", Actor: "bob", Action: "apps.list", Outcome: "allowed", At: day(3, 17), RecordID: "e5"}},
		Audit: []projector.AuditEntry{
			{Topic: pConfig0.Topic, Partition: 0, Offset: 1, At: day(2, 15), EventID: "e1", Type: "t.upserted",
				Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "a1", Generation: 1,
				After: json.RawMessage(`{"z": 0}`), Hash: "h1"},
			{Topic: pConfig0.Topic, Partition: 0, Offset: 2, At: day(4, 16), EventID: "e2", Type: "t.upserted",
				Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "a1", Generation: 2,
				Before: json.RawMessage(`{"z": 0}`), After: json.RawMessage(`{"z": 1, "a": [1,2]}`), PrevHash: "h1", Hash: "h2"},
			{Topic: pAudit0.Topic, Partition: 0, Offset: 0, At: day(3, 17), EventID: "e5", Type: "t.audit",
				Cluster: "c2", Kind: "api", Name: "apps.list", Actor: "bob", After: json.RawMessage(`{}`), Hash: "h3"},
			// e2 appended again: refused, with e2's actor and no results.
			{Topic: pConfig0.Topic, Partition: 0, Offset: 3, At: day(5, 18), EventID: "e2", Type: "t.upserted",
				Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "a1", Generation: 2,
				Refused: "generation 2 is not newer than the object's generation 2 (event e2)", PrevHash: "h2", Hash: "h4"},
		},
		Objects: []projector.ObjectGeneration{
			{ObjectKey: projector.ObjectKey{Cluster: "c1", Kind: "appprojects", Namespace: "argocd", Name: "team"}, Generation: 2,
				EventID: "e7", UpdatedAt: day(1, 17)},
			{ObjectKey: projector.ObjectKey{Cluster: "c2"}, Generation: 3, Deleted: true, EventID: "e8", UpdatedAt: day(1, 19)},
		},
		Operations: []projector.Operation{
			{RequestID: "r9", Cluster: "c1", EventID: "e9", Partition: 0, Offset: 4, At: day(1, 20)},
		},
		Deployments: []projector.Deployment{
			deployment("d1", "c1", "p1", day(3, 1)),
			deployment("d2", "c1", "p2", day(5, 2)),
			deployment("d3", "c2", "p1", day(10, 3)),
		},
		Gaps: []projector.Gap{
			{DeploymentGap: schemas.DeploymentGap{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "a1"},
				AppUID: "u1", Reason: schemas.GapHistoryTrimmed, FromHistoryID: 3, ToHistoryID: ptr[int64](5), Detail: "trimmed"},
				EventID: "g1", At: day(3, 4)},
			{DeploymentGap: schemas.DeploymentGap{Resource: schemas.Resource{Cluster: "c2", Namespace: "argocd", Name: "a3"},
				Reason: schemas.GapDeletedUnobserved, FromHistoryID: 8, LastRecorded: ptr[int64](7)},
				EventID: "g2", At: day(6, 5)},
		},
		Targets: []projector.Target{
			{AppKey: key("c1", "argocd", "web"), Placement: "web", PlacementGeneration: 2, Generation: 5, EventID: "t1", At: day(4, 1)},
			{AppKey: key("c2", "argocd", "web"), Placement: "web", PlacementGeneration: 2, Generation: 1, EventID: "t2", At: day(4, 2)},
			{AppKey: key("c1", "shop", "cart"), Placement: "cart", PlacementGeneration: 1, Generation: 1, EventID: "t3", At: day(7, 1)},
		},
		Health: []projector.HealthChange{
			{AppKey: key("c1", "argocd", "web"), Health: projector.HealthDegraded, At: day(4, 3), EventID: "h1"},
			{AppKey: key("c1", "argocd", "web"), Health: projector.HealthHealthy, At: day(4, 4), EventID: "h2"},
		},
	}
}

func deployment(id, cluster, project string, finished time.Time) projector.Deployment {
	d := projector.Deployment{EventID: "ev-" + id}
	d.DeploymentRecorded = schemas.DeploymentRecorded{
		Resource:     schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "app-" + id, Generation: 4},
		DeploymentID: id, Revision: "rev-" + id, PreviousRevision: "prev", Phase: "Succeeded", Initiator: "auto",
		StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Images: []string{"nginx:1"}, Project: project,
		Labels: map[string]string{"tier": "web"}, AppUID: "uid-" + id,
	}
	if id == "d3" {
		d.HistoryID = ptr[int64](12)
		d.RevisionCommittedAt = ptr(finished.Add(-time.Hour))
		d.Unchanged = true
	}
	return d
}

func commit(t testing.TB, s *Store, b *projector.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// load asks for every key of b (and some that are not there).
func load(t *testing.T, s *Store, b *projector.Batch) *projector.Rows {
	t.Helper()
	need := &projector.Need{Registrations: []string{"nope"}, Beats: []string{"nope"},
		Desired: []projector.AppKey{key("nope", "", "")}, Observed: []projector.AppKey{key("c1", "argocd", "nope")},
		ChainHeads: []projector.Partition{{Topic: "nope"}}}
	for _, r := range b.Registrations {
		need.Registrations = append(need.Registrations, r.Cluster)
	}
	for _, r := range b.Beats {
		need.Beats = append(need.Beats, r.Cluster)
	}
	for _, r := range b.Desired {
		need.Desired = append(need.Desired, r.AppKey)
	}
	for _, r := range b.Observed {
		need.Observed = append(need.Observed, r.AppKey)
	}
	for _, r := range b.Objects {
		need.Objects = append(need.Objects, r.ObjectKey)
	}
	for _, r := range b.Operations {
		need.Operations = append(need.Operations, r.RequestID)
	}
	for p := range b.ChainHeads {
		need.ChainHeads = append(need.ChainHeads, p)
	}
	rows, err := s.Load(t.Context(), need)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return rows
}

// rowsOf is what Load should return for b's keys.
func rowsOf(b *projector.Batch) *projector.Rows {
	r := &projector.Rows{
		Registrations: map[string]projector.ClusterRegistration{}, Beats: map[string]projector.ClusterBeat{},
		Desired: map[projector.AppKey]projector.AppDesired{}, Observed: map[projector.AppKey]projector.AppObserved{},
		Objects: map[projector.ObjectKey]projector.ObjectGeneration{}, Operations: map[string]projector.Operation{},
		ChainHeads: b.ChainHeads,
	}
	for _, v := range b.Registrations {
		r.Registrations[v.Cluster] = v
	}
	for _, v := range b.Beats {
		r.Beats[v.Cluster] = v
	}
	for _, v := range b.Desired {
		r.Desired[v.AppKey] = v
	}
	for _, v := range b.Observed {
		r.Observed[v.AppKey] = v
	}
	for _, v := range b.Objects {
		r.Objects[v.ObjectKey] = v
	}
	for _, v := range b.Operations {
		r.Operations[v.RequestID] = v
	}
	return r
}

// calls reads the calls table, which no query returns whole.
func calls(t *testing.T, s *Store) []projector.Call {
	t.Helper()
	var out []projector.Call
	err := s.each(t.Context(), `SELECT `+columns("", callColumns)+` FROM calls ORDER BY request_id`, nil,
		func(rows *sql.Rows) error {
			var c projector.Call
			var at sql.NullInt64
			var ids []byte
			var placement string
			var gen int64
			var changed bool
			if err := rows.Scan(&c.RequestID, &c.Actor, &c.Action, &c.Outcome, &at, &ids, &c.Via, &placement, &gen, &changed); err != nil {
				return err
			}
			c.At = fromNanos(at)
			if ns, name, ok := strings.Cut(placement, "/"); ok {
				c.Placement = &schemas.PlacementRef{Namespace: ns, Name: name, Generation: gen}
			}
			if err := fromJSON(ids, &c.EventIDs, "event_ids"); err != nil {
				return err
			}
			if changed != (len(c.EventIDs) > 0) {
				t.Errorf("call %s: changed %v with events %v", c.RequestID, changed, c.EventIDs)
			}
			out = append(out, c)
			return nil
		})
	if err != nil {
		t.Fatalf("calls: %v", err)
	}
	// A call's own record is the event call_events maps to it that it
	// did not append.
	err = s.each(t.Context(), `SELECT event_id, request_id FROM call_events ORDER BY event_id`, nil, func(rows *sql.Rows) error {
		var id, req string
		if err := rows.Scan(&id, &req); err != nil {
			return err
		}
		for i := range out {
			if out[i].RequestID == req && !slices.Contains(out[i].EventIDs, id) {
				out[i].RecordID = id
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("call events: %v", err)
	}
	return out
}

func testRoundTrip(t *testing.T, b backend) {
	s := b.fresh(t)
	want := fixture()
	commit(t, s, want)

	offsets, err := s.Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Offsets, offsets); diff != "" {
		t.Errorf("Offsets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rowsOf(want), load(t, s, want)); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Calls, calls(t, s)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, p := range []projector.Partition{pConfig0, pAudit0} {
		got, err := s.Chain(t.Context(), p, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		var wantChain []projector.AuditEntry
		for _, e := range want.Audit {
			if e.Topic == p.Topic && e.Partition == p.Partition {
				wantChain = append(wantChain, e)
			}
		}
		if diff := cmp.Diff(wantChain, got); diff != "" {
			t.Errorf("Chain(%v) (-want +got):\n%s", p, diff)
		}
	}
	deps, err := s.Deployments(t.Context(), projector.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Deployments, deps); diff != "" {
		t.Errorf("Deployments (-want +got):\n%s", diff)
	}
	gaps, err := s.Gaps(t.Context(), projector.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Gaps, gaps); diff != "" {
		t.Errorf("Gaps (-want +got):\n%s", diff)
	}
	targets, err := s.Targets(t.Context(), projector.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Targets, targets); diff != "" {
		t.Errorf("Targets (-want +got):\n%s", diff)
	}
	health, err := s.HealthChanges(t.Context(), projector.DeploymentFilter{Cluster: "c1", Namespace: "argocd", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Health, health); diff != "" {
		t.Errorf("HealthChanges (-want +got):\n%s", diff)
	}
	if later, err := s.HealthChanges(t.Context(), projector.DeploymentFilter{From: day(4, 4)}); err != nil || len(later) != 1 {
		t.Errorf("HealthChanges from the second: %v, %v", later, err)
	}
	acks := ackRows(t, s)
	if diff := cmp.Diff([]projector.Ack{want.Acks[1], want.Acks[0], want.Acks[2]}, acks); diff != "" {
		t.Errorf("acks (-want +got):\n%s", diff)
	}
}

func ackRows(t *testing.T, s *Store) []projector.Ack {
	t.Helper()
	var out []projector.Ack
	err := s.each(t.Context(), `SELECT `+columns("", ackColumns)+` FROM acks ORDER BY event_id, cluster`, nil,
		func(rows *sql.Rows) error {
			a, err := scanAck(rows)
			out = append(out, a)
			return err
		})
	if err != nil {
		t.Fatalf("acks: %v", err)
	}
	return out
}

func testLoadMissing(t *testing.T, b backend) {
	s := b.fresh(t)
	rows, err := s.Load(t.Context(), &projector.Need{Registrations: []string{"c1"}, Desired: []projector.AppKey{key("c", "n", "a")},
		ChainHeads: []projector.Partition{pConfig0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Registrations)+len(rows.Beats)+len(rows.Desired)+len(rows.Observed)+len(rows.ChainHeads) != 0 {
		t.Errorf("Load on an empty store = %+v, want no rows", rows)
	}
	// More keys than one query asks for.
	var many projector.Batch
	var need projector.Need
	for i := range 2*keysPerQuery + 7 {
		k := key("c", "ns", fmt.Sprintf("app-%d", i))
		many.Desired = append(many.Desired, projector.AppDesired{AppKey: k, Generation: int64(i)})
		need.Desired = append(need.Desired, k)
	}
	commit(t, s, &many)
	rows, err = s.Load(t.Context(), &need)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Desired) != len(many.Desired) {
		t.Errorf("Load of %d keys returned %d rows", len(many.Desired), len(rows.Desired))
	}
}

// counts returns the number of rows of every table.
func counts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range []string{"offsets", "chain_heads", "registrations", "beats", "desired_apps", "observed_apps",
		"object_generations", "operations", "acks", "calls", "call_events", "audit_entries", "deployments", "gaps", "targets",
		"health_changes"} {
		var n int
		if err := s.r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM `+tb).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", tb, err)
		}
		out[tb] = n
	}
	return out
}

func testIdempotent(t *testing.T, b backend) {
	s := b.fresh(t)
	commit(t, s, fixture())
	want := counts(t, s)
	commit(t, s, fixture())
	if diff := cmp.Diff(want, counts(t, s)); diff != "" {
		t.Errorf("row counts after the same batch again (-once +twice):\n%s", diff)
	}

	// The same rows twice in one batch: one row each; audit entries keep
	// the first, other tables the last.
	dup := fixture()
	dup.Offsets = nil
	first := dup.Audit[0]
	changed := first
	changed.Name = "rewritten"
	dup.Audit = append(dup.Audit, changed)
	dup.Acks = append(dup.Acks, projector.Ack{EventID: "e9", Cluster: "c2", Code: "late"},
		projector.Ack{EventID: "e9", Cluster: "c2", Applied: true, Result: "Failed", Reason: "one or more objects failed to apply"})
	dup.Deployments = append(dup.Deployments, dup.Deployments[0])
	dup.Gaps = append(dup.Gaps, dup.Gaps[1])
	dup.Calls = append(dup.Calls, dup.Calls[0])
	dup.Targets = append(dup.Targets, dup.Targets[0])
	dup.Health = append(dup.Health, dup.Health[1])
	dup.Objects = append(dup.Objects, dup.Objects[0])
	dup.Operations = append(dup.Operations, dup.Operations[0])
	commit(t, s, dup)
	if diff := cmp.Diff(want, counts(t, s)); diff != "" {
		t.Errorf("row counts after duplicates (-want +got):\n%s", diff)
	}
	chain, err := s.Chain(t.Context(), pConfig0, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 1 || chain[0].Name != first.Name {
		t.Errorf("audit entry rewritten: got %+v, want name %q", chain, first.Name)
	}
	if acks := ackRows(t, s); acks[len(acks)-1].Result != "Failed" || acks[len(acks)-1].Reason != "one or more objects failed to apply" {
		t.Errorf("ack of e9 = %+v, want the last written (an operation's result)", acks[len(acks)-1])
	}
}

func testOffsets(t *testing.T, b backend) {
	tests := []struct {
		name    string
		stored  int64
		commit  int64
		wantErr bool
		want    int64
	}{
		{"forward", 10, 11, false, 11},
		{"same offset again", 10, 10, false, 10},
		{"backwards is stale", 10, 9, true, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loc := b.database(t)
			replica1, replica2 := b.store(t, loc), b.store(t, loc)
			commit(t, replica1, &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: tc.stored}})
			err := replica2.Commit(t.Context(), &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: tc.commit}})
			if got := errors.Is(err, ErrStaleOffset); got != tc.wantErr || (err != nil && !tc.wantErr) {
				t.Fatalf("Commit = %v, want stale offset: %v", err, tc.wantErr)
			}
			got, err := replica1.Offsets(t.Context(), []projector.Partition{pStatus0, pStatus0, pConfig1})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[projector.Partition]int64{pStatus0: tc.want}, got); diff != "" {
				t.Errorf("Offsets (-want +got):\n%s", diff)
			}
		})
	}
}

// testStaleOffsetWritesNothing: a batch that is stale on one partition
// writes neither its rows nor any of its offsets.
func testStaleOffsetWritesNothing(t *testing.T, b backend) {
	s := b.fresh(t)
	commit(t, s, &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: 100}})
	before := counts(t, s)
	bad := fixture() // moves config, deployments and audit forward, status back
	err := s.Commit(t.Context(), bad)
	if !errors.Is(err, ErrStaleOffset) {
		t.Fatalf("Commit = %v, want ErrStaleOffset", err)
	}
	if diff := cmp.Diff(before, counts(t, s)); diff != "" {
		t.Errorf("a stale batch changed rows (-before +after):\n%s", diff)
	}
	got, err := s.Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[projector.Partition]int64{pStatus0: 100}, got); diff != "" {
		t.Errorf("Offsets after a stale batch (-want +got):\n%s", diff)
	}
}

// testCompareAndSet: a batch that names where its step began (From) lands
// only if the stored offset is still there, whether it would move the
// offset forward or not, and writes nothing otherwise. This is what fences
// a replica that lost a partition in the middle of a step: its batch ends
// beyond what the new owner committed since, so the one-sided fence alone
// would take it.
func testCompareAndSet(t *testing.T, b backend) {
	loc := b.database(t)
	owner, zombie := b.store(t, loc), b.store(t, loc)
	at := func(from, to int64) *projector.Batch {
		return &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: to}, From: map[projector.Partition]int64{pStatus0: from},
			Beats: []projector.ClusterBeat{{Cluster: fmt.Sprintf("c-%d-%d", from, to), At: day(1, 0)}}}
	}
	commit(t, owner, at(0, 10)) // none stored counts as 0
	before := counts(t, owner)
	for _, bad := range []*projector.Batch{at(0, 100), at(5, 100), at(11, 12)} {
		if err := zombie.Commit(t.Context(), bad); !errors.Is(err, ErrStaleOffset) {
			t.Errorf("Commit from %d to %d with 10 stored = %v, want ErrStaleOffset", bad.From[pStatus0], bad.Offsets[pStatus0], err)
		}
	}
	if diff := cmp.Diff(before, counts(t, owner)); diff != "" {
		t.Errorf("fenced batches changed rows (-before +after):\n%s", diff)
	}
	commit(t, owner, at(10, 20))
	got, err := owner.Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[projector.Partition]int64{pStatus0: 20}, got); diff != "" {
		t.Errorf("Offsets (-want +got):\n%s", diff)
	}
}

func testTimeOutOfRange(t *testing.T, b backend) {
	s := b.fresh(t)
	bad := &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: 1},
		Beats: []projector.ClusterBeat{{Cluster: "c1", At: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if err := s.Commit(t.Context(), bad); err == nil || errors.Is(err, ErrStaleOffset) {
		t.Fatalf("Commit of a beat in 1500 = %v, want an out-of-range error", err)
	}
	if got, err := s.Offsets(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("Offsets = %v, %v after a failed commit; want none", got, err)
	}
}

func testReopen(t *testing.T, b backend) {
	loc := b.database(t)
	s1, err := b.open(t.Context(), loc)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s1, fixture())
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := b.store(t, loc)
	v, err := s2.SchemaVersion(t.Context())
	if err != nil || v != len(migrations) {
		t.Errorf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
	}
	var n int
	if err := s2.r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil || n != len(migrations) {
		t.Errorf("schema_version has %d rows (%v), want %d", n, err, len(migrations))
	}
	if diff := cmp.Diff(rowsOf(fixture()), load(t, s2, fixture())); diff != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", diff)
	}
}

// testConcurrentOpen: replicas that start together migrate one at a time.
func testConcurrentOpen(t *testing.T, b backend) {
	loc := b.database(t)
	var g errgroup.Group
	stores := make([]*Store, 4)
	for i := range stores {
		g.Go(func() error {
			s, err := b.open(t.Context(), loc)
			stores[i] = s
			return err
		})
	}
	err := g.Wait()
	for _, s := range stores {
		if s != nil {
			if cerr := s.Close(); cerr != nil {
				t.Error(cerr)
			}
		}
	}
	if err != nil {
		t.Fatalf("concurrent open: %v", err)
	}
	s := b.store(t, loc)
	var n int
	if err := s.r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil || n != len(migrations) {
		t.Errorf("schema_version has %d rows (%v), want %d", n, err, len(migrations))
	}
}

// testConcurrentReplicas: two handles on one database commit disjoint
// partitions at the same time.
func testConcurrentReplicas(t *testing.T, b backend) {
	const batches, rows = 20, 50
	loc := b.database(t)
	replicas := []*Store{b.store(t, loc), b.store(t, loc)}
	g, ctx := errgroup.WithContext(t.Context())
	for i, s := range replicas {
		p := projector.Partition{Topic: "argosy.status", Partition: int32(i)}
		g.Go(func() error {
			for n := range batches {
				bt := &projector.Batch{Offsets: map[projector.Partition]int64{p: int64(n+1) * rows}}
				for r := range rows {
					bt.Observed = append(bt.Observed, projector.AppObserved{AppKey: key(fmt.Sprintf("c%d", i), "ns",
						fmt.Sprintf("app-%d", r)), Seq: int64(n), UpdatedAt: day(1, n)})
					bt.Deployments = append(bt.Deployments, deployment(fmt.Sprintf("c%d-%d-%d", i, n, r), fmt.Sprintf("c%d", i), "p", day(1, r)))
				}
				if err := s.Commit(ctx, bt); err != nil {
					return fmt.Errorf("replica %d batch %d: %w", i, n, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	got, err := replicas[0].Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[projector.Partition]int64{{Topic: "argosy.status", Partition: 0}: batches * rows,
		{Topic: "argosy.status", Partition: 1}: batches * rows}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Offsets (-want +got):\n%s", diff)
	}
	c := counts(t, replicas[1])
	if c["observed_apps"] != 2*rows || c["deployments"] != 2*batches*rows {
		t.Errorf("rows: %d observed, %d deployments; want %d, %d", c["observed_apps"], c["deployments"], 2*rows, 2*batches*rows)
	}
}

// testConcurrentFence: two replicas that both believe they own a partition
// commit it at the same time. Each commit either lands or fails with
// ErrStaleOffset, and the rows are those of the commit whose offset is
// stored.
func testConcurrentFence(t *testing.T, b backend) {
	const commits = 40
	loc := b.database(t)
	replicas := []*Store{b.store(t, loc), b.store(t, loc)}
	g, ctx := errgroup.WithContext(t.Context())
	stale := make([]int, len(replicas))
	top := make([]int64, len(replicas)) // the last offset each tried: the highest of all cannot be stale
	var ready sync.WaitGroup
	ready.Add(len(replicas))
	for i, s := range replicas {
		g.Go(func() error {
			ready.Done()
			ready.Wait() // start together
			for n := range int64(commits) {
				// Neck and neck, the lead changing at every step: replica
				// 0 at 10n+5 or 10n+1, replica 1 at 10n+3.
				off := 10*n + 3
				if i == 0 {
					off = 10*n + 1 + 4*((n+1)%2)
				}
				top[i] = off
				err := s.Commit(ctx, &projector.Batch{Offsets: map[projector.Partition]int64{pStatus0: off},
					Observed: []projector.AppObserved{{AppKey: key("c1", "ns", "app"), Seq: off}}})
				switch {
				case errors.Is(err, ErrStaleOffset):
					stale[i]++
				case err != nil:
					return fmt.Errorf("replica %d offset %d: %w", i, off, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	offsets, err := replicas[0].Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := replicas[1].Load(t.Context(), &projector.Need{Observed: []projector.AppKey{key("c1", "ns", "app")}})
	if err != nil {
		t.Fatal(err)
	}
	if seq, want := rows.Observed[key("c1", "ns", "app")].Seq, max(top[0], top[1]); seq != offsets[pStatus0] || seq != want {
		t.Errorf("stored offset %d, row of offset %d; want both %d", offsets[pStatus0], seq, want)
	}
	t.Logf("stale commits: %v of %d each", stale, commits)
}
