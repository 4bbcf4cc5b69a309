//go:build integration

package hub_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// TestConcurrentConflictingWritesOneWins sends conflicting writes, all
// expecting generation 1, to two replicas at once, round after round:
// exactly one is accepted each round, the others get 409 (after a 503,
// when the partition changed hands in the middle or the broker did not
// say whether a commit took, the writer resends with the same idempotency
// key, as the CLI does), and the log holds exactly the accepted ones.
func TestConcurrentConflictingWritesOneWins(t *testing.T) {
	r := newRig(t, 2)
	a, b := r.client(r.start(), "root"), r.client(r.start(), "root")
	r.register(a, "c1", map[string]string{"round": "0"})
	const rounds, writers = 5, 6
	accepted := map[string]bool{}
	for round := 1; round <= rounds; round++ {
		expected := int64(round)
		var mu sync.Mutex
		var wins []string
		var wg sync.WaitGroup
		for i := range writers {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				label := fmt.Sprintf("%d-%d", round, i)
				req, opts := api.ClusterRequest{Labels: map[string]string{"round": label}, ExpectedGeneration: &expected},
					api.WriteOptions{IdempotencyKey: "writer-" + label}
				res, err := c.RegisterCluster(t.Context(), "c1", req, opts)
				for try := 0; try < 3 && api.StatusOf(err) == http.StatusServiceUnavailable; try++ {
					// The outcome may be unsettled (the broker did not say
					// whether the commit took): the same key tells, as the
					// CLI's resend does.
					res, err = c.RegisterCluster(t.Context(), "c1", req, opts)
				}
				switch st := api.StatusOf(err); {
				case err == nil:
					mu.Lock()
					wins = append(wins, label)
					accepted[res.Events[0].ID] = true
					mu.Unlock()
				case st == http.StatusConflict:
				default:
					t.Errorf("writer %s: %v", label, err)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d writes accepted (%v), want exactly 1", round, len(wins), wins)
		}
	}
	var inLog []string
	for _, d := range ofType(r.decoded(r.records(events.TopicConfig)), events.TypeClusterRegistered) {
		if d.Data.(*schemas.ClusterRegistered).Generation > 1 {
			inLog = append(inLog, d.Event.ID())
			if !accepted[d.Event.ID()] {
				t.Errorf("the log holds %s, which no answer accepted", d.Event.ID())
			}
		}
	}
	if len(inLog) != rounds {
		t.Errorf("the log holds %d updates, want %d", len(inLog), rounds)
	}
}

// TestWriteDecidesOnTheWholeLog writes through one replica and then,
// expecting the generation before that write, through another whose ledger
// reads the log slowly: taking the partition makes the second replica read
// it to its end before deciding, so it answers 409 rather than accepting a
// write based on what it had not read yet.
func TestWriteDecidesOnTheWholeLog(t *testing.T) {
	r := newRig(t, 2)
	fast := r.client(r.start(), "root")
	slow := r.client(r.start(hub.WithLedgerLag(300*time.Millisecond)), "root")
	r.register(fast, "c1", nil)
	for gen := int64(1); gen <= 3; gen++ {
		g := gen
		// The slow replica has read generation g; the fast one moves on.
		waitGeneration(t, slow, "c1", g)
		if _, err := fast.RegisterCluster(t.Context(), "c1", api.ClusterRequest{Labels: map[string]string{"by": "fast"}, ExpectedGeneration: &g}, api.WriteOptions{}); err != nil {
			t.Fatalf("fast replica at generation %d: %v", g, err)
		}
		_, err := slow.RegisterCluster(t.Context(), "c1", api.ClusterRequest{Labels: map[string]string{"by": "slow"}, ExpectedGeneration: &g}, api.WriteOptions{})
		if api.StatusOf(err) != http.StatusConflict {
			t.Fatalf("slow replica expecting generation %d after the fast one moved past it = %v, want 409", g, err)
		}
	}
}

// waitGeneration waits until the replica's ledger lists the cluster at
// generation gen.
func waitGeneration(t *testing.T, c *api.Client, cluster string, gen int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		objs, err := c.Objects(t.Context(), cluster, api.KindClusters)
		if err == nil && len(objs) == 1 && objs[0].Generation == gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never listed %s at generation %d: %+v, %v", cluster, gen, objs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
