//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// offsetAgent is an agent of cluster on f's topics whose every Kafka
// client is given hooks, and whose handled config events are counted.
type offsetAgent struct {
	*agent
	handled atomic.Int64
}

func (f *fleet) offsetAgent(t *testing.T, cluster string, keys spoke.Keys, store spoke.Store, hooks ...kgo.Hook) *offsetAgent {
	t.Helper()
	a := &offsetAgent{agent: &agent{cluster: cluster, argo: &fakeArgo{applied: map[string]int64{}}}}
	conn := []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}
	if len(hooks) > 0 {
		conn = append(conn, kgo.WithHooks(hooks...))
	}
	var err error
	a.run, err = spoke.New(cluster, keys, f.hub.Public(), conn, a.argo, noApps{}, store,
		spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(time.Second),
		spoke.WithApplied(func(context.Context, *events.Decoded) { a.handled.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// eventually waits up to a minute for ok, failing with what otherwise.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// storedOffset is the config offset in the agent's state, or -1.
func storedOffset(t *testing.T, store spoke.Store) int64 {
	t.Helper()
	rec, ok, err := store.Get(t.Context(), spoke.ConfigOffsetKey)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return rec.Offset
}

// configEnd is the end of cluster's config partition.
func (f *fleet) configEnd(t *testing.T, cluster string) int64 {
	t.Helper()
	topic := f.topics[events.TopicConfig]
	ends, err := kadm.NewClient(f.client).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, events.NewPartitioner(nil).PartitionOf(cluster, 2))
	return o.Offset
}

// TestAgentHoldsThreeConnections runs an agent that applied its events
// and waits until its connections to the one broker have settled (franz-go
// closes a connection idle for 20 s): one client keeps one connection for
// produce requests, one for fetches and one for the rest, so three at
// most. The connection franz-go keeps to the seed address besides is not
// counted (see conns.brokers).
func TestAgentHoldsThreeConnections(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &conns{live: map[net.Conn]kgo.BrokerMetadata{}}
	a := f.offsetAgent(t, "three", keys, newMemStore(), c)
	defer a.start(t)()
	f.publish(f.prod, f.upsert(a.cluster, "web", 1))
	waitApplied(t, a.agent, "argocd/web")
	least := c.brokers()
	for deadline := time.Now().Add(90 * time.Second); least > 3 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		least = min(least, c.brokers())
	}
	if least > 3 {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("the agent holds %d connections to the broker after 90 s, want at most 3: %v", least, slices.Collect(maps.Values(c.live)))
	}
}

// TestAgentKeepsItsOffsetInItsState applies events, restarts the agent
// and checks that the restart resumed from the offset in its state,
// handling nothing again, and that the broker holds no consumer group
// named after the cluster.
func TestAgentKeepsItsOffsetInItsState(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore()
	first := f.offsetAgent(t, "stateful", keys, store)
	stop := first.start(t)
	f.publish(f.prod, f.upsert(first.cluster, "web", 1), f.upsert(first.cluster, "api", 1))
	waitApplied(t, first.agent, "argocd/api")
	end := f.configEnd(t, first.cluster)
	eventually(t, "the agent never stored its offset", func() bool { return storedOffset(t, store) == end })
	stop()

	second := f.offsetAgent(t, "stateful", keys, store)
	defer second.start(t)()
	f.publish(f.prod, f.upsert(second.cluster, "new", 1))
	// Argo CD holds the new Application before the agent counts it as
	// handled (it acknowledges first), and it stores the offset after: the
	// stored end says that every event up to the new one was counted.
	end = f.configEnd(t, second.cluster)
	eventually(t, "the restarted agent never stored the end", func() bool { return storedOffset(t, store) == end })
	if n := second.handled.Load(); n != 1 {
		t.Errorf("the restarted agent handled %d events, want only the new one", n)
	}
	groups, err := kadm.NewClient(f.client).ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(groups.Groups(), spoke.Group(first.cluster)) {
		t.Errorf("the broker holds the consumer group %s", spoke.Group(first.cluster))
	}
}

// dropOffsets is a Store that loses the agent's config offset writes
// while drop is set: the agent stopped after an effect was durable and
// before its offset was.
type dropOffsets struct {
	*memStore
	drop atomic.Bool
}

func (s *dropOffsets) Put(ctx context.Context, key string, a spoke.Applied) error {
	if key == spoke.ConfigOffsetKey && s.drop.Load() {
		return nil
	}
	return s.memStore.Put(ctx, key, a)
}

// TestAgentRedeliversWhatItsOffsetMissed stops an agent whose offset
// writes were lost after it applied two events: its restart handles them
// again, and, as they were applied before, changes nothing.
func TestAgentRedeliversWhatItsOffsetMissed(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	store := &dropOffsets{memStore: newMemStore()}
	first := f.offsetAgent(t, "crashy", keys, store)
	stop := first.start(t)
	f.publish(f.prod, f.upsert(first.cluster, "web", 1))
	waitApplied(t, first.agent, "argocd/web")
	eventually(t, "the agent never stored its offset", func() bool { return storedOffset(t, store) == f.configEnd(t, first.cluster) })
	store.drop.Store(true)
	f.publish(f.prod, f.upsert(first.cluster, "web", 2), f.upsert(first.cluster, "api", 1))
	waitApplied(t, first.agent, "argocd/api")
	stop()
	store.drop.Store(false)

	second := f.offsetAgent(t, "crashy", keys, store)
	second.argo.applied = first.argo.snapshot()
	defer second.start(t)()
	end := f.configEnd(t, first.cluster)
	eventually(t, "the restarted agent never stored the end", func() bool { return storedOffset(t, store) == end })
	if n := second.handled.Load(); n != 2 {
		t.Errorf("the restarted agent handled %d events, want the 2 whose offset was lost", n)
	}
	if got, want := second.argo.snapshot(), map[string]int64{"argocd/web": 2, "argocd/api": 1}; !maps.Equal(got, want) {
		t.Errorf("after the redelivery Argo CD holds %v, want %v", got, want)
	}
}

// TestAgentMigratesItsGroupOffset starts an agent with no offset in its
// state on a partition whose group offset an older agent committed: it
// starts there, keeps the offset in its state from then on, and never
// writes the group again.
func TestAgentMigratesItsGroupOffset(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "upgraded"
	f.publish(f.prod, f.upsert(cluster, "old", 1), f.upsert(cluster, "older", 1))
	topic, part := f.topics[events.TopicConfig], events.NewPartitioner(nil).PartitionOf(cluster, 2)
	legacy := f.configEnd(t, cluster)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: legacy, LeaderEpoch: -1})
	adm := kadm.NewClient(f.client)
	resp, err := adm.CommitOffsets(t.Context(), spoke.Group(cluster), offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore()
	// An older agent's state: its bootstrap was done long ago.
	if err := store.Put(t.Context(), "bootstrap", spoke.Applied{Partition: part, Offset: -1}); err != nil {
		t.Fatal(err)
	}
	a := f.offsetAgent(t, cluster, keys, store)
	defer a.start(t)()
	f.publish(f.prod, f.upsert(cluster, "new", 1))
	waitApplied(t, a.agent, "argocd/new")
	end := f.configEnd(t, cluster)
	eventually(t, "the agent never stored its offset", func() bool { return storedOffset(t, store) == end })
	if n := a.handled.Load(); n != 1 {
		t.Errorf("the upgraded agent handled %d events, want only the one after its group's offset", n)
	}
	got, err := adm.FetchOffsets(t.Context(), spoke.Group(cluster))
	if err == nil {
		err = got.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup(topic, part); !ok || o.At != legacy {
		t.Errorf("the group's offset is %v, want it left at %d", o, legacy)
	}
}

// countOffsets counts the writes of the agent's config offset.
type countOffsets struct {
	*memStore
	writes atomic.Int64
}

func (s *countOffsets) Put(ctx context.Context, key string, a spoke.Applied) error {
	if key == spoke.ConfigOffsetKey {
		s.writes.Add(1)
	}
	return s.memStore.Put(ctx, key, a)
}

// TestAgentWritesItsOffsetRarelyForOthers runs an agent on a partition
// that other clusters' changes keep busy: each write of its offset is a
// request to its cluster's API server, so their records must not move it
// each time they pass. Its own next change is committed at once, and the
// offset then covers theirs too.
func TestAgentWritesItsOffsetRarelyForOthers(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	part := events.NewPartitioner(nil).PartitionOf("quiet", 2)
	var others []string
	for i := 0; len(others) < 4; i++ {
		if c := fmt.Sprintf("other-%d", i); events.NewPartitioner(nil).PartitionOf(c, 2) == part {
			others = append(others, c)
		}
	}
	store := &countOffsets{memStore: newMemStore()}
	a := f.offsetAgent(t, "quiet", keys, store)
	defer a.start(t)()
	f.publish(f.prod, f.upsert(a.cluster, "web", 1))
	waitApplied(t, a.agent, "argocd/web")
	eventually(t, "the agent never stored its offset", func() bool { return storedOffset(t, store) == f.configEnd(t, a.cluster) })
	before := store.writes.Load()
	for i := range 40 {
		f.publish(f.prod, f.upsert(others[i%4], "web", int64(i/4+1)))
		time.Sleep(25 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if n := store.writes.Load() - before; n > 1 {
		t.Errorf("40 other clusters' records in a second moved the offset %d times, want at most once", n)
	}
	f.publish(f.prod, f.upsert(a.cluster, "web", 2))
	waitApplied(t, a.agent, "argocd/web")
	end := f.configEnd(t, a.cluster)
	eventually(t, "its own change was not committed with the others'", func() bool { return storedOffset(t, store) == end })
}
