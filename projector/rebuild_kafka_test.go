//go:build integration

package projector_test

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// registerKeys appends the hub-signed registrations of the rig's cluster
// keys to the trust topic, as the hub does when clusters join.
func (r *rig) registerKeys() {
	r.t.Helper()
	for _, c := range []string{"c1", "c2"} {
		s := r.signers[c]
		r.publish(r.t.Context(), r.hub, newEvent(r.t, "//argosy.dev/hub/test", events.TypeKeyRegistered, events.Subject{Cluster: c},
			schemas.KeyRegistered{KeyID: s.KeyID(), Owner: c, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
				Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())}))
	}
}

// generations publishes generations from to to of the workload: the
// clusters' Application, c1's status, heartbeat and acknowledgement, and
// c2's status.
func (r *rig) generations(from, to int64) {
	r.t.Helper()
	c1, c2 := r.signers["c1"], r.signers["c2"]
	for gen := from; gen <= to; gen++ {
		up := appUpsert(r.t, "c1", "guestbook", gen)
		r.publish(r.t.Context(), r.hub, up, appUpsert(r.t, "c2", "guestbook", gen))
		r.publish(r.t.Context(), c1, appStatus(r.t, "c1", gen, "Progressing"), heartbeat(r.t, "c1", gen, "v1"),
			configApplied(r.t, "c1", gen, up.ID()))
		r.publish(r.t.Context(), c2, appStatus(r.t, "c2", gen, "Healthy"))
	}
}

// startService runs a projector replica of group over the rig's topics
// into store, trusting the hub's key alone, with steps of two records.
// stop ends it and waits for Run, which must return nil.
func startService(t *testing.T, r *rig, group string, store projector.Store) (stop func()) {
	t.Helper()
	svc, err := projector.NewService([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.hub.Public())}, projector.WithTopics(r.topics), projector.WithGroup(group),
		projector.WithMaxRecords(2), projector.WithClockMargin(100*time.Millisecond), projector.WithLeaveTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Service.Run = %v, want nil once stopped", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Service.Run did not return within 30s of its context ending")
		}
	}
	t.Cleanup(stop)
	return stop
}

// rebuild folds the rig's topics from from into a new store with
// projector.Rebuild, and returns the store and the last progress reported.
func rebuild(t *testing.T, r *rig, store projector.Store, from projector.From) (projector.Progress, error) {
	t.Helper()
	var last projector.Progress
	rb, err := projector.NewRebuild([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.hub.Public())}, from, projector.WithTopics(r.topics),
		projector.WithMaxRecords(3), projector.WithClockMargin(100*time.Millisecond),
		projector.WithProgress(func(p projector.Progress) {
			if p.Records < last.Records || p.Events < last.Events {
				t.Errorf("progress went back: %+v after %+v", p, last)
			}
			last = p
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return last, rb.Run(ctx)
}

// diffStores compares two stores with sqlstore.Diff and fails the test on
// any difference. It returns the tables' comparisons.
func diffStores(t *testing.T, a, b *sqlstore.Store) map[string]sqlstore.TableComparison {
	t.Helper()
	var n int
	tables, err := sqlstore.Diff(t.Context(), a, b, func(d sqlstore.Difference) error {
		if n++; n <= 20 {
			t.Errorf("stores differ: %+v", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sqlstore.TableComparison{}
	for _, c := range tables {
		out[c.Table] = c
	}
	return out
}

// TestRebuildEqualsTheLiveViews projects a workload live, with failed
// store commits, a replica that joins and leaves (two rebalances) and a
// restart, and with bad records and transactions in the log; then it
// rebuilds the views from the log into a new store. The two stores must
// match row by row: views, audit chains and offsets.
func TestRebuildEqualsTheLiveViews(t *testing.T) {
	r := newRig(t)
	r.registerKeys()
	r.generations(1, 3)
	r.produce(events.TopicStatus, &kgo.Record{Key: []byte("c2"), Value: []byte("not an event")})
	r.produceCommitted(events.TopicConfig, r.signed(r.hub, appUpsert(t, "c1", "committed", 1)))

	group := r.topics[events.TopicConfig] + ".live"
	live := &failingStore{Store: newStore(t), fail: map[int32]bool{2: true, 5: true, 9: true}}
	stopA := startService(t, r, group, live)
	r.generations(4, 6)
	stopB := startService(t, r, group, live) // a rebalance: the partitions are shared
	r.generations(7, 9)
	waitFor(t, live.Store, r)
	stopB() // another: they go back to the first replica
	r.generations(10, 11)
	r.publish(t.Context(), r.signers["c2"], heartbeat(t, "c1", 99, "forged")) // c2 signing for c1: refused
	waitFor(t, live.Store, r)
	stopA()
	r.generations(12, 13)
	stopA = startService(t, r, group, live) // a restart, from the stored offsets
	waitFor(t, live.Store, r)
	stopA()
	if n := live.commits.Load(); n < 10 {
		t.Fatalf("%d commits of the live store, want at least 10 so that every injected failure happened", n)
	}

	rebuilt := newStore(t)
	progress, err := rebuild(t, r, rebuilt, projector.From{})
	if err != nil {
		t.Fatal(err)
	}
	tables := diffStores(t, live.Store, rebuilt)
	for _, table := range []string{"offsets", "desired_apps", "observed_apps", "beats", "acks", "audit_entries", "chain_heads"} {
		if tables[table].RowsA == 0 {
			t.Errorf("table %s is empty: nothing to compare", table)
		}
	}
	ends := r.endOffsets(r.folded()...)
	var total int64
	for _, end := range ends {
		total += end
	}
	if !progress.Done || progress.Records != total || progress.Total != total {
		t.Errorf("last progress %+v, want done with all %d records", progress, total)
	}
	if progress.Refused != 2 {
		t.Errorf("%d records refused, want 2: the malformed one and the forged heartbeat", progress.Refused)
	}
}

// waitFor waits until store has folded every record the rig's topics hold.
func waitFor(t *testing.T, store *sqlstore.Store, r *rig) {
	t.Helper()
	if err := waitCaughtUp(t.Context(), store, r.endOffsets(r.folded()...), nil); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildRefusesAStoreThatHoldsViews: a rebuild into the live store, or
// any store that has folded the log, fails before it changes anything.
func TestRebuildRefusesAStoreThatHoldsViews(t *testing.T) {
	r := newRig(t)
	r.registerKeys()
	r.generations(1, 2)
	first := newStore(t)
	if _, err := rebuild(t, r, first, projector.From{}); err != nil {
		t.Fatal(err)
	}
	copyOf := newStore(t)
	if _, err := rebuild(t, r, copyOf, projector.From{}); err != nil {
		t.Fatal(err)
	}
	r.generations(3, 3)
	_, err := rebuild(t, r, first, projector.From{})
	if !errors.Is(err, projector.ErrStoreNotEmpty) {
		t.Fatalf("rebuild into a store with views = %v, want ErrStoreNotEmpty", err)
	}
	diffStores(t, first, copyOf) // unchanged
}

// TestRebuildFromATime rebuilds from a time between two parts of the
// workload: the store holds exactly the records appended since, and its
// audit entries are the live ones of that period.
func TestRebuildFromATime(t *testing.T) {
	r := newRig(t)
	r.registerKeys()
	r.generations(1, 3)
	time.Sleep(20 * time.Millisecond)
	// Log times are in milliseconds: a rebuild from a time starts at the
	// records stamped at or after its millisecond.
	from := time.Now().Truncate(time.Millisecond)
	r.generations(4, 5)
	ends := r.endOffsets(r.folded()...)

	all := newStore(t)
	if _, err := rebuild(t, r, all, projector.From{}); err != nil {
		t.Fatal(err)
	}
	since := newStore(t)
	progress, err := rebuild(t, r, since, projector.From{Time: from})
	if err != nil {
		t.Fatal(err)
	}
	want, err := all.Audit(t.Context(), projector.AuditFilter{From: from})
	if err != nil {
		t.Fatal(err)
	}
	got, err := since.Audit(t.Context(), projector.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rows []projector.AuditRow) []string {
		var out []string
		for _, row := range rows {
			out = append(out, row.EventID)
		}
		slices.Sort(out)
		return out
	}
	if len(want) == 0 || !slices.Equal(ids(want), ids(got)) {
		t.Errorf("audit entries rebuilt from %s: %v, want the live ones since then, %v", from, ids(got), ids(want))
	}
	offsets, err := since.Offsets(t.Context(), slices.Collect(maps.Keys(ends)))
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range ends {
		if offsets[p] != end && offsets[p] != 0 {
			t.Errorf("%v stored at %d, want its end %d", p, offsets[p], end)
		}
	}
	if progress.Total == 0 || progress.Total >= sum(ends) {
		t.Errorf("a rebuild from %s read %d of %d records, want some and fewer", from, progress.Total, sum(ends))
	}
}

func sum(m map[projector.Partition]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
