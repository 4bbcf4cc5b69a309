package sqlstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// eventLog builds decoded events with consecutive offsets per partition.
type eventLog struct {
	next map[projector.Partition]int64
	out  []*events.Decoded
}

// add appends an event of type typ about subj at time at.
func (l *eventLog) add(t testing.TB, p projector.Partition, at time.Time, typ string, subj events.Subject, data any) string {
	t.Helper()
	sp, ok := events.Lookup(typ)
	if !ok {
		t.Fatalf("unknown event type %s", typ)
	}
	if l.next == nil {
		l.next = map[projector.Partition]int64{}
	}
	off := l.next[p]
	l.next[p]++
	e := event.New()
	id := fmt.Sprintf("%s-%d-%d", p.Topic, p.Partition, off)
	e.SetID(id)
	e.SetType(typ)
	e.SetTime(at.Truncate(time.Second))
	l.out = append(l.out, &events.Decoded{Event: &e, Spec: sp, Data: data, Subject: subj, LogTime: at,
		Topic: p.Topic, Partition: p.Partition, Offset: off})
	return id
}

// again appends the event of index i once more, as a replay: the same
// signed event at the next offset of its partition, appended at at.
func (l *eventLog) again(i int, at time.Time) {
	d := *l.out[i]
	p := projector.Partition{Topic: d.Topic, Partition: d.Partition}
	d.Offset, d.LogTime = l.next[p], at
	l.next[p]++
	l.out = append(l.out, &d)
}

func app(cluster, name string) events.Subject {
	return events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: name}
}

// history is a log of every kind of event the projector folds, at times
// with nanoseconds in a zone other than UTC.
func history(t testing.TB) []*events.Decoded {
	var l eventLog
	at := func(i int) time.Time { return time.Date(2026, 3, 1, 12, 0, i, 100000000+i*1111111, cet) }
	c1, c2 := events.Subject{Cluster: "c1"}, events.Subject{Cluster: "c2"}
	l.add(t, pConfig0, at(0), events.TypeClusterRegistered, c1,
		&schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "c1", Name: "c1", Generation: 1}, Labels: map[string]string{"env": "prod"}})
	up1 := l.add(t, pConfig0, at(1), events.TypeApplicationUpserted, app("c1", "web"), &schemas.ApplicationUpserted{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1}, Project: "p1",
		Spec: json.RawMessage(`{"source": {"repoURL": "https://git.example/r", "path": "web"}, "destination": {}}`)})
	up2 := l.add(t, pConfig0, at(2), events.TypeApplicationUpserted, app("c1", "web"), &schemas.ApplicationUpserted{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 2}, Project: "p1",
		Spec: json.RawMessage(`{"source": {"repoURL": "https://git.example/r", "path": "web2"}, "destination": {}}`)})
	l.add(t, pConfig1, at(3), events.TypeClusterRegistered, c2, &schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "c2", Name: "c2", Generation: 1}})
	l.add(t, pAudit0, at(4), events.TypeAuditRecorded, events.Subject{Cluster: "c1"}, &schemas.AuditRecorded{
		RequestID: "req-1", Actor: "alice", Action: "apps.update", Outcome: "allowed", EventIDs: []string{up1, up2}})
	l.add(t, pStatus0, at(5), events.TypeConfigApplied, app("c1", "web"), &schemas.ConfigApplied{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1}, EventID: up1})
	l.add(t, pStatus0, at(6), events.TypeHeartbeat, c1, &schemas.Heartbeat{Cluster: "c1", Seq: 3, Applications: 1})
	l.add(t, pStatus0, at(7), events.TypeApplicationStatus, app("c1", "web"), &schemas.ApplicationStatusChanged{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web"}, Seq: 1, Full: true,
		Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: "Healthy"}})
	// Folded after a store round trip: the chain continues from the stored
	// head, and the delete's before is the stored spec, byte for byte.
	l.add(t, pConfig0, at(8), events.TypeApplicationDeleted, app("c1", "web"), &schemas.ApplicationDeleted{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 3}})
	l.add(t, pConfig0, at(9), events.TypeApplicationUpserted, app("c1", "web"), &schemas.ApplicationUpserted{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 4}, Project: "p1",
		Spec: json.RawMessage(`{"b": 1}`)})
	l.add(t, pConfig1, at(10), events.TypeClusterDeregistered, c2, &schemas.ClusterDeregistered{Resource: schemas.Resource{Cluster: "c2", Name: "c2", Generation: 2}})
	l.add(t, pStatus0, at(11), events.TypeConfigRejected, app("c1", "web"), &schemas.ConfigRejected{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 4}, EventID: "x", Code: "invalid"})
	l.add(t, pAudit0, at(12), events.TypeAuditRecorded, events.Subject{Cluster: "hub"}, &schemas.AuditRecorded{
		RequestID: "req-2", Actor: "bob", Action: "apps.list", Outcome: "allowed"})
	return l.out
}

// fold folds ds into v, loading what it needs from s, and commits.
func fold(t testing.TB, s *Store, v *projector.View, ds []*events.Decoded) {
	t.Helper()
	for _, d := range ds {
		// As projector.Folder does, the store is asked only for rows the
		// working set does not hold.
		if miss := v.Missing(projector.Needs(d)); len(miss.Registrations)+len(miss.Beats)+len(miss.Desired)+len(miss.Observed)+
			len(miss.Objects)+len(miss.Operations)+len(miss.ChainHeads) > 0 {
			rows, err := s.Load(t.Context(), miss)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			v.Merge(miss, rows)
		}
		if err := projector.Apply(v, d); err != nil {
			t.Fatalf("apply %s: %v", d.Spec.Type, err)
		}
	}
	commit(t, s, v.Flush())
}

// chains returns the stored audit chain of every partition.
func chains(t testing.TB, s *Store) map[projector.Partition][]projector.AuditEntry {
	t.Helper()
	parts, err := s.ChainPartitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[projector.Partition][]projector.AuditEntry{}
	for _, p := range parts {
		if out[p], err = s.Chain(t.Context(), p, -1, 0); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testChainVerifies: the chain of entries folded, stored and read back
// holds, though each entry's time has nanoseconds and another zone.
func testChainVerifies(t *testing.T, b backend) {
	s := b.fresh(t)
	fold(t, s, projector.NewView(), history(t))
	got := chains(t, s)
	if len(got) != 3 {
		t.Fatalf("chains of %d partitions, want 3 (two config, one audit)", len(got))
	}
	for p, entries := range got {
		if broken := projector.Verify(entries); broken != nil {
			t.Errorf("Verify(Chain(%v)) = %+v, want nil", p, broken)
		}
	}
	if got[pConfig0][0].At.Nanosecond() == 0 {
		t.Errorf("entry time %s lost its nanoseconds", got[pConfig0][0].At)
	}
}

// testTamperDetected changes stored audit rows with SQL; Verify finds
// each change.
func testTamperDetected(t *testing.T, b backend) {
	tests := []struct {
		name   string
		sql    string
		args   []any
		offset int64 // where the chain breaks
	}{
		{"name changed", `UPDATE audit_entries SET name = 'other' WHERE topic = ? AND part = 0 AND off = 1`, []any{pConfig0.Topic}, 1},
		{"time moved a nanosecond", `UPDATE audit_entries SET at = at + 1 WHERE topic = ? AND part = 0 AND off = 2`, []any{pConfig0.Topic}, 2},
		{"after changed", `UPDATE audit_entries SET after = ? WHERE topic = ? AND part = 0 AND off = 1`,
			[]any{[]byte(`{"source": {}}`), pConfig0.Topic}, 1},
		{"entry removed", `DELETE FROM audit_entries WHERE topic = ? AND part = 0 AND off = 2`, []any{pConfig0.Topic}, 3},
		{"hash replaced", `UPDATE audit_entries SET hash = 'f00d' WHERE topic = ? AND part = 0 AND off = 0`,
			[]any{pConfig0.Topic}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := b.fresh(t)
			fold(t, s, projector.NewView(), history(t))
			if _, err := s.w.ExecContext(t.Context(), s.d.bind(tc.sql), tc.args...); err != nil {
				t.Fatal(err)
			}
			broken := projector.Verify(chains(t, s)[pConfig0])
			if broken == nil || broken.Offset != tc.offset {
				t.Errorf("Verify = %+v, want a broken link at offset %d", broken, tc.offset)
			}
		})
	}
}

// testFoldResumes folds the history in steps, each with a new view that
// loads its rows from the store, and gets the same chains and rows as one
// fold in memory.
func testFoldResumes(t *testing.T, b backend) {
	h := history(t)
	foldResumes(t, b, h, [][2]int{{0, 3}, {3, 8}, {8, 9}, {9, len(h)}})
}

// replays is a log of config events about c1's objects, then each of the
// first four appended again: the rows the fold refuses them by (an
// AppProject's generation, an Application's, an operation's request id, the
// cluster's registration) must come from the store in a later step.
func replays(t testing.TB) []*events.Decoded {
	var l eventLog
	at := func(i int) time.Time { return time.Date(2026, 3, 1, 12, 0, i, 100000000+i*1111111, cet) }
	res := func(name string, gen int64) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: gen}
	}
	team := events.Subject{Cluster: "c1", Kind: schemas.SubjectAppProjects, Namespace: "argocd", Name: "team"}
	expires := at(3).Add(time.Hour)
	l.add(t, pConfig0, at(0), events.TypeClusterRegistered, events.Subject{Cluster: "c1"},
		&schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "c1", Name: "c1", Generation: 1}})
	l.add(t, pConfig0, at(1), events.TypeAppProjectUpserted, team, &schemas.AppProjectUpserted{Resource: res("team", 1), Spec: json.RawMessage(`{}`)})
	l.add(t, pConfig0, at(2), events.TypeApplicationUpserted, app("c1", "web"), &schemas.ApplicationUpserted{Resource: res("web", 1),
		Project: "team", Spec: json.RawMessage(`{"project":"team"}`)})
	l.add(t, pConfig0, at(3), events.TypeOperationRequested, app("c1", "web"), &schemas.OperationRequested{Resource: res("web", 1),
		RequestID: "r1", Operation: schemas.OperationSync, ExpiresAt: &expires})
	l.add(t, pConfig0, at(4), events.TypeAppProjectDeleted, team, &schemas.AppProjectDeleted{Resource: res("team", 2)})
	l.add(t, pConfig0, at(5), events.TypeApplicationDeleted, app("c1", "web"), &schemas.ApplicationDeleted{Resource: res("web", 2)})
	for i := range 4 {
		l.again(i, at(6+i))
	}
	return l.out
}

// testReplaysRefusedAcrossSteps folds replays in steps, each with a new
// view: every replay is refused, as in one fold in memory.
func testReplaysRefusedAcrossSteps(t *testing.T, b backend) {
	s := foldResumes(t, b, replays(t), [][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}})
	var refused int
	for _, e := range chains(t, s)[pConfig0] {
		if e.Refused != "" {
			refused++
		}
	}
	if refused != 4 {
		t.Errorf("%d refused audit entries, want 4", refused)
	}
}

// foldResumes folds h in steps, each with a new view that loads its rows
// from the store, and checks that the store holds what one fold in memory
// gives: rows, chains and offsets.
func foldResumes(t *testing.T, b backend, h []*events.Decoded, steps [][2]int) *Store {
	t.Helper()
	want, wantChains := foldInMemory(t, h)
	s := b.fresh(t)
	for _, step := range steps {
		fold(t, s, projector.NewView(), h[step[0]:step[1]])
	}
	if diff := cmp.Diff(wantChains, chains(t, s)); diff != "" {
		t.Errorf("chains folded in steps (-in memory +stored):\n%s", diff)
	}
	if diff := cmp.Diff(rowsOf(want), load(t, s, want)); diff != "" {
		t.Errorf("rows folded in steps (-in memory +stored):\n%s", diff)
	}
	offsets, err := s.Offsets(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Offsets, offsets); diff != "" {
		t.Errorf("Offsets (-want +got):\n%s", diff)
	}
	return s
}

// testRechain opens a store of schema version 7, whose chains were hashed
// with the stored bytes of before and after (chainV1), and checks that the
// migration to version 8 rehashes them into exactly the chains and heads a
// fold with today's hash writes. Where an old chain was already broken,
// the partition keeps its old hashes from the broken entry on, so the
// check still finds the break there.
func testRechain(t *testing.T, b backend) {
	fresh, wantChains := foldInMemory(t, history(t))
	t.Run("intact", func(t *testing.T) {
		s := storeOfVersion7(t, b, oldChains(fresh, -1))
		if diff := cmp.Diff(wantChains, chains(t, s)); diff != "" {
			t.Errorf("rehashed chains (-fresh fold +migrated):\n%s", diff)
		}
		heads, err := s.Load(t.Context(), &projector.Need{ChainHeads: slices.Collect(maps.Keys(fresh.ChainHeads))})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fresh.ChainHeads, heads.ChainHeads); diff != "" {
			t.Errorf("chain heads (-fresh fold +migrated):\n%s", diff)
		}
	})
	t.Run("broken before", func(t *testing.T) {
		const k = 2 // the third entry of config partition 0 was changed
		s := storeOfVersion7(t, b, oldChains(fresh, k))
		got := chains(t, s)
		for p, es := range got {
			broken := projector.Verify(es)
			switch {
			case p != pConfig0 && broken != nil:
				t.Errorf("%v: %+v, want it whole", p, broken)
			case p == pConfig0 && (broken == nil || broken.Offset != es[k].Offset):
				t.Errorf("%v: %+v, want it broken at offset %d", p, broken, es[k].Offset)
			}
		}
		if diff := cmp.Diff(wantChains[pConfig0][:k], got[pConfig0][:k]); diff != "" {
			t.Errorf("the entries before the break (-fresh fold +migrated):\n%s", diff)
		}
	})
}

// oldChains returns b's audit entries and heads hashed as schema version 7
// hashed them, with the after of the entry at index broken of config
// partition 0 changed after it was hashed (-1 for none).
func oldChains(b *projector.Batch, broken int) *projector.Batch {
	old := &projector.Batch{Offsets: b.Offsets, ChainHeads: map[projector.Partition]string{}}
	n := 0
	for _, e := range b.Audit {
		p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
		e.PrevHash = old.ChainHeads[p]
		e.Hash = chainV1(e.PrevHash, e)
		old.ChainHeads[p] = e.Hash
		if p == pConfig0 {
			if n == broken {
				e.After = json.RawMessage(`{"changed":true}`)
			}
			n++
		}
		old.Audit = append(old.Audit, e)
	}
	return old
}

// storeOfVersion7 makes a store of schema version 7 holding old, then
// opens it as this build does, which migrates it.
func storeOfVersion7(t *testing.T, b backend, old *projector.Batch) *Store {
	t.Helper()
	loc := b.database(t)
	s, err := b.unmigrated(loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.migrateTo(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	// Audit entries as version 7 held them: without the later columns.
	entries := old.Audit
	old.Audit = nil
	if err := s.Commit(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	rows, err := each(entries, auditRow)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i] = rows[i][:len(auditColumnsV8)]
	}
	tx, err := s.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.upsert(t.Context(), tx, table{name: "audit_entries", cols: auditColumnsV8, keys: 3, keep: true}, rows); err != nil {
		t.Fatal(errors.Join(err, tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return b.store(t, loc)
}

// foldInMemory folds h into a view in memory and returns its batch and the
// batch's audit entries by partition, in order.
func foldInMemory(t *testing.T, h []*events.Decoded) (*projector.Batch, map[projector.Partition][]projector.AuditEntry) {
	t.Helper()
	v := projector.NewView()
	for _, d := range h {
		if err := projector.Apply(v, d); err != nil {
			t.Fatal(err)
		}
	}
	b := v.Flush()
	chains := map[projector.Partition][]projector.AuditEntry{}
	for _, e := range b.Audit {
		p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
		chains[p] = append(chains[p], e)
	}
	return b, chains
}
