//go:build integration

package projector_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// TestRunnerYieldsToRebalanceWhileIdle: a Runner that has caught up still
// holds its last poll's records' rebalance block while it waits for more
// (it polls the next records while it commits the last). A member joining
// the group must get partitions at once, not after the rebalance timeout
// expels the Runner.
func TestRunnerYieldsToRebalanceWhileIdle(t *testing.T) {
	r := newRig(t)
	r.publish(t.Context(), r.signers["c1"], appStatus(t, "c1", 1, "Healthy"), heartbeat(t, "c1", 1, "v1"))
	r.publish(t.Context(), r.signers["c2"], appStatus(t, "c2", 1, "Healthy"))
	ends := r.endOffsets(r.folded()...)

	store := newStore(t)
	group := r.topics[events.TopicConfig] + ".projector"
	stopped, _ := startRunner(t, r, group, store, 0)
	if err := waitCaughtUp(t.Context(), store, ends, stopped); err != nil {
		t.Fatal(err)
	}

	// A second member joins. The Runner's partitions can move only once it
	// lets the rebalance run.
	var mu sync.Mutex
	got := map[string][]int32{}
	assigned := make(chan struct{})
	joiner := kafkatest.Client(t, kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(r.folded()...),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 && len(ps) > 0 {
				close(assigned)
			}
			for topic, parts := range ps {
				got[topic] = append(got[topic], parts...)
			}
		}))
	pollCtx, stopPolling := context.WithCancel(t.Context())
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		for pollCtx.Err() == nil {
			joiner.PollFetches(pollCtx)
		}
	}()
	defer func() {
		stopPolling()
		<-polling
	}()
	// Well under the 60 s rebalance timeout, after which the broker would
	// expel the Runner and hand everything to the joiner anyway.
	select {
	case <-assigned:
		mu.Lock()
		t.Logf("the joining member got %v", got)
		mu.Unlock()
	case <-stopped:
		t.Fatal("Run returned while the group rebalanced")
	case <-time.After(30 * time.Second):
		t.Fatal("the joining member got no partitions within 30s: the Runner held the rebalance")
	}
}

// newStore opens a fresh SQLite store that the test closes at its end.
func newStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "views.db")
	return openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenSQLite(ctx, path) })
}

// startRunner runs a Runner of group over the rig's topics into store, with
// steps of at most maxRecords (0: the default). The channel closes when Run
// returns. stop ends Run, which must return nil within 30 s, and closes the
// client, which must close within 15 s; the test's cleanup calls it too.
func startRunner(t *testing.T, r *rig, group string, store projector.Store, maxRecords int) (<-chan struct{}, func() error) {
	t.Helper()
	opts := []projector.Option{projector.WithGroup(group)}
	if maxRecords > 0 {
		opts = append(opts, projector.WithMaxRecords(maxRecords))
	}
	return startRunnerWith(t, r, []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store, opts...)
}

// startRunnerWith is startRunner with the client options conn and the
// Runner's options opts.
func startRunnerWith(t *testing.T, r *rig, conn []kgo.Opt, store projector.Store, opts ...projector.Option) (<-chan struct{}, func() error) {
	t.Helper()
	runner, err := projector.NewRunner(conn, store, r.intake(), append([]projector.Option{projector.WithTopics(r.topics)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		runErr = runner.Run(ctx)
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case <-stopped:
			if runErr != nil {
				runErr = fmt.Errorf("Run returned %w, want nil after its context ended", runErr)
			}
		case <-time.After(30 * time.Second):
			runErr = errors.New("Run did not return within 30s of its context ending")
		}
		var closeErr error
		if !runner.Close(15 * time.Second) {
			closeErr = errors.New("the runner's client did not close within 15s of Run returning")
		}
		return errors.Join(runErr, closeErr)
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return stopped, stop
}

// failingStore refuses the commits whose numbers (from 1) are in fail.
type failingStore struct {
	*sqlstore.Store
	fail    map[int32]bool
	commits atomic.Int32
}

func (s *failingStore) Commit(ctx context.Context, b *projector.Batch) error {
	if s.fail[s.commits.Add(1)] {
		return errors.New("injected commit failure")
	}
	return s.Store.Commit(ctx, b)
}

// TestRunnerFoldsAgainAfterAFailedCommit: a step whose store commit fails is
// dropped whole, together with the records polled after it, and folded
// again from the stored offsets. Steps of two records make the runner hold
// the next poll while each commit fails. The views and audit chains must
// equal those of a run without failures: nothing lost, nothing twice.
func TestRunnerFoldsAgainAfterAFailedCommit(t *testing.T) {
	r := newRig(t)
	r.workload(5)
	ends := r.endOffsets(r.folded()...)
	want := r.fold()

	before := sumsBy(t, "argosy.projector.steps", "result")
	store := &failingStore{Store: newStore(t), fail: map[int32]bool{2: true, 3: true, 6: true}}
	stopped, _ := startRunner(t, r, r.topics[events.TopicConfig]+".failing", store, 2)
	if err := waitCaughtUp(t.Context(), store.Store, ends, stopped); err != nil {
		t.Fatal(err)
	}
	if n := store.commits.Load(); n < 7 {
		t.Fatalf("%d commits, want at least 7 so that every injected failure happened", n)
	}
	if got := delta(before, sumsBy(t, "argosy.projector.steps", "result"))["failed"]; got != 3 {
		t.Errorf("argosy_projector_steps_total{result=failed} rose by %d, want 3", got)
	}
	if diff := cmp.Diff(readViews(t, want), readViews(t, store.Store)); diff != "" {
		t.Errorf("views after failed commits differ from a run without (-without +with):\n%s", diff)
	}
	compareChains(t, want, store.Store)
}

// TestBatchDeliveredTwiceChangesNothing appends a batch of status deltas
// and a deployment gap, then the same signed records again at later
// offsets, and folds the log
// with commits that fail, so that steps holding the batch are folded
// twice. The views and the health changes must be those of the batch
// folded once, without failures: one health change per delta, keyed by
// the batch's event id and the delta's index.
func TestBatchDeliveredTwiceChangesNothing(t *testing.T) {
	r := newRig(t)
	r.workload(2)
	res := func(name string) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: 1}
	}
	batch := newEvent(t, "//argosy.dev/spoke/c1", events.TypeApplicationStatusBatch, events.Subject{Cluster: "c1"},
		schemas.ApplicationStatusBatch{Cluster: "c1", Deltas: []schemas.ApplicationStatusChanged{
			{Resource: res("web"), Seq: 1, Full: true, Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: "Degraded"}},
			{Resource: res("api"), Seq: 1, Full: true, Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: "Healthy"}},
			{Resource: res("web"), Seq: 2, Health: &schemas.HealthStatus{Status: "Healthy"}},
		}})
	gap := newEvent(t, "//argosy.dev/spoke/c1", events.TypeDeploymentGap,
		events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "web"},
		schemas.DeploymentGap{Resource: res("web"), Reason: schemas.GapHistoryTrimmed, FromHistoryID: 3})
	recs := r.publish(t.Context(), r.signers["c1"], batch, gap)
	r.publish(t.Context(), r.signers["c2"], appStatus(t, "c2", 3, "Degraded"))
	want := r.fold()

	time.Sleep(10 * time.Millisecond) // the copies' log time is later
	for _, rec := range recs {
		again := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
		if err := r.raw.ProduceSync(t.Context(), again).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	store := &failingStore{Store: newStore(t), fail: map[int32]bool{2: true, 3: true, 4: true, 6: true}}
	stopped, _ := startRunner(t, r, r.topics[events.TopicConfig]+".twice", store, 2)
	if err := waitCaughtUp(t.Context(), store.Store, r.endOffsets(r.folded()...), stopped); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(readViews(t, want), readViews(t, store.Store)); diff != "" {
		t.Errorf("views with the batch folded twice differ from once (-once +twice):\n%s", diff)
	}
	health := func(s *sqlstore.Store) []string {
		hs, err := s.HealthChanges(t.Context(), projector.DeploymentFilter{Cluster: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			out = append(out, h.Name+" "+h.Health+" "+h.EventID+" "+h.At.Format(time.RFC3339Nano))
		}
		return out
	}
	gaps := func(s *sqlstore.Store) []projector.Gap {
		gs, err := s.Gaps(t.Context(), projector.DeploymentFilter{Cluster: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	if g := gaps(store.Store); len(g) != 1 {
		t.Errorf("gaps %+v, want the one appended", g)
	}
	if diff := cmp.Diff(gaps(want), gaps(store.Store)); diff != "" {
		t.Errorf("gaps with the record folded twice differ from once (-once +twice):\n%s", diff)
	}
	id := batch.ID()
	got := health(store.Store)
	if diff := cmp.Diff(health(want), got); diff != "" {
		t.Errorf("health changes with the batch folded twice differ from once (-once +twice):\n%s", diff)
	}
	for _, w := range []string{"web Degraded " + id + "#0", "api Healthy " + id + "#1", "web Healthy " + id + "#2"} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w+" ") }) {
			t.Errorf("health changes %q lack %q", got, w)
		}
	}
}
