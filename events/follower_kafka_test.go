//go:build integration

package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestCutFromAFollowerReplica runs TestCutRacesARevocation's race on a
// cluster of two brokers, each in a rack of its own, with the trust topic
// replicated to both: the live reader's trust follower names the rack of
// the replica that does not lead the trust partition, so that replica
// serves its fetches, one replication round behind the leader, while the
// rebuild reads from the leader. Every decision must be the same, both
// outcomes must occur, most of the live follower's fetches must have gone
// to the follower replica, and every trust record it read (the key's
// registration and revocation) must have come from there; the rebuild's
// fetches must all have gone to the leader.
func TestCutFromAFollowerReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := kafkatest.StartCluster(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	r := newRigOn(t, c.Client, 2, 1, nil)
	leader, follower := trustReplicas(ctx, t, r)
	liveFetches, rebuiltFetches := &kafkatest.FetchCounter{}, &kafkatest.FetchCounter{}
	counts, concurrent := raceARevocation(t, r,
		[]kgo.Opt{kgo.Rack(kafkatest.Rack(int(follower))), kgo.WithHooks(liveFetches)},
		[]kgo.Opt{kgo.WithHooks(rebuiltFetches)})
	live, rebuilt := liveFetches.Counts(), rebuiltFetches.Counts()
	liveRecs := liveFetches.Records(r.topics[events.TopicTrust])
	t.Logf("decisions %v, %d accepted after the revocation; trust fetches by node (leader %d): live %v, rebuilt %v; trust records the live follower read, by node: %v",
		counts, concurrent, leader, live, rebuilt, liveRecs)
	if counts["accepted"] == 0 || counts["revoked_key"] == 0 {
		t.Errorf("decisions %v: want both outcomes", counts)
	}
	if live[follower] <= live[leader] {
		t.Errorf("the live follower's trust fetches by node %v: want most at node %d, in its rack, not the leader %d", live, follower, leader)
	}
	if liveRecs[leader] != 0 || liveRecs[follower] != 2 {
		t.Errorf("the live follower read the trust records, by node, %v: want the registration and the revocation from node %d", liveRecs, follower)
	}
	if rebuilt[follower] != 0 || rebuilt[leader] == 0 {
		t.Errorf("the rebuild's trust fetches by node %v: want all at the leader %d", rebuilt, leader)
	}
}

// trustReplicas waits until both replicas of r's trust partition are in
// sync, and returns the node that leads it and the other.
func trustReplicas(ctx context.Context, t *testing.T, r *rig) (leader, follower int32) {
	t.Helper()
	adm := kadm.NewClient(r.client)
	topic := r.topics[events.TopicTrust]
	for {
		td, err := adm.ListTopics(ctx, topic)
		p := td[topic].Partitions[0]
		if err == nil && p.Leader >= 0 && len(p.Replicas) == 2 && len(p.ISR) == 2 {
			for _, id := range p.Replicas {
				if id != p.Leader {
					return p.Leader, id
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trust partition %+v: not two replicas in sync: %v", p, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
