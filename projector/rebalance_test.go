//go:build integration

package projector_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
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
	ends := r.endOffsets(r.topics[events.TopicConfig], r.topics[events.TopicStatus],
		r.topics[events.TopicDeployments], r.topics[events.TopicAudit])

	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	group := r.topics[events.TopicConfig] + ".projector"
	runner, cl, err := projector.NewRunner([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))},
		projector.RunnerConfig{Group: group, Topics: r.topics},
		r.dec, kafkatest.Client(t, events.ProducerOpts(nil)...), store, slog.New(slog.DiscardHandler))
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
	defer func() {
		cancel()
		<-stopped
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
		if !projector.CloseClient(cl, 15*time.Second) {
			t.Error("the runner's client did not close within 15s")
		}
	}()
	if err := waitCaughtUp(t.Context(), store, ends, stopped); err != nil {
		t.Fatal(err)
	}

	// A second member joins. The Runner's partitions can move only once it
	// lets the rebalance run.
	var mu sync.Mutex
	got := map[string][]int32{}
	assigned := make(chan struct{})
	joiner := kafkatest.Client(t, kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(r.topics[events.TopicConfig], r.topics[events.TopicStatus],
			r.topics[events.TopicDeployments], r.topics[events.TopicAudit]),
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
		t.Fatalf("Run returned while the group rebalanced: %v", runErr)
	case <-time.After(30 * time.Second):
		t.Fatal("the joining member got no partitions within 30s: the Runner held the rebalance")
	}
}
