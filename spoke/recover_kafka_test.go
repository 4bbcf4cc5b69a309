//go:build integration

package spoke_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestAgentRecoversLostConfigRecords deletes config records an agent had
// not read yet (as retention or a truncation would): a new generation of
// one Application, the deletion of another and a third one created. All
// three reach the cluster from the compacted desired-state topic:
//   - for the agent that ran before, by recovering the lost range when it
//     starts;
//   - for a new agent, by its bootstrap, although the config record of the
//     snapshot's last change is gone;
//   - for an agent whose bootstrap was cut short, by a bootstrap that also
//     deletes what the agent's state holds.
func TestAgentRecoversLostConfigRecords(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	const cluster = "lossy"
	topic := f.topics[events.TopicConfig]
	part := events.NewPartitioner(nil).PartitionOf(cluster, 2)
	adm := kadm.NewClient(f.client)
	w := f.configWriter("txn.lossy")
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	agentOn := func(t *testing.T, store spoke.Store, applied map[string]int64) *agent {
		a := &agent{cluster: cluster, argo: &fakeArgo{applied: applied}}
		a.run, err = spoke.New(cluster, keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))},
			a.argo, noApps{}, store, spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(time.Second),
			spoke.WithLogger(testLog(t)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	write := func(es ...*event.Event) {
		t.Helper()
		if _, err := w.Write(t.Context(), es...); err != nil {
			t.Fatal(err)
		}
	}
	end := func() int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(t.Context(), topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(topic, part)
		return o.Offset
	}
	want := func(t *testing.T, a *agent, want map[string]int64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !maps.Equal(a.argo.snapshot(), want); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the agent holds %v, want %v", a.argo.snapshot(), want)
			}
		}
	}

	// The agent applies two Applications and commits past them.
	store := newMemStore()
	first := agentOn(t, store, map[string]int64{})
	stop := first.start(t)
	write(f.upsert(cluster, "web", 1), f.upsert(cluster, "old", 1))
	want(t, first, map[string]int64{"argocd/web": 1, "argocd/old": 1})
	written := end()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if storedOffset(t, store) >= written {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never committed past its records")
		}
	}
	stop()

	// While it is away, three changes are written and deleted unread.
	res := schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "old", Generation: 2}
	del, err := events.New("//argosy.dev/hub/test", events.TypeApplicationDeleted,
		events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "old"}.String(), cluster,
		schemas.ApplicationDeleted{Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	write(f.upsert(cluster, "web", 2), del, f.upsert(cluster, "new", 1))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: end()})
	deleted, err := adm.DeleteRecords(t.Context(), offs)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	recovered := map[string]int64{"argocd/web": 2, "argocd/new": 1}

	t.Run("the agent that ran before recovers the lost range", func(t *testing.T) {
		a := agentOn(t, store, first.argo.snapshot())
		defer a.start(t)()
		want(t, a, recovered)
	})
	t.Run("a new agent bootstraps although the snapshot's last config record is gone", func(t *testing.T) {
		store := &readsOf{memStore: newMemStore()}
		a := agentOn(t, store, map[string]int64{})
		defer a.start(t)()
		want(t, a, recovered)
		if n := store.count(spoke.KindApplication + ".argocd.old"); n != 0 {
			t.Errorf("a first bootstrap read the state %d times for an object the snapshot deletes, want none", n)
		}
	})
	t.Run("a bootstrap cut short deletes what the state holds", func(t *testing.T) {
		// What a bootstrap leaves when it stops after applying two objects:
		// its pending record, and theirs.
		held := newMemStore()
		if err := held.Put(t.Context(), "bootstrap", spoke.Applied{Offset: -1, Pending: true}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "old"} {
			if err := held.Put(t.Context(), spoke.KindApplication+".argocd."+name, spoke.Applied{Generation: 1, EventID: "earlier-" + name}); err != nil {
				t.Fatal(err)
			}
		}
		a := agentOn(t, held, map[string]int64{"argocd/web": 1, "argocd/old": 1})
		defer a.start(t)()
		want(t, a, recovered)
	})
}

// readsOf is a memStore that counts reads by key.
type readsOf struct {
	*memStore
	mu    sync.Mutex
	reads map[string]int
}

func (s *readsOf) Get(ctx context.Context, key string) (spoke.Applied, bool, error) {
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[string]int{}
	}
	s.reads[key]++
	s.mu.Unlock()
	return s.memStore.Get(ctx, key)
}

func (s *readsOf) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[key]
}
