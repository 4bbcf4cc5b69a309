//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// fetched is a kgo hook that holds a weak pointer to every record its
// client buffers, and to the bytes the record's value lies in (its
// batch, decompressed, or the fetch response of an uncompressed one): it
// keeps none of them alive, and tells which something else still does.
type fetched struct {
	mu   sync.Mutex
	recs []fetchedRecord
}

type fetchedRecord struct {
	topic, key string
	offset     int64
	rec        weak.Pointer[kgo.Record]
	value      weak.Pointer[byte] // nil when the record has no value
}

func (f *fetched) OnFetchRecordBuffered(r *kgo.Record) {
	fr := fetchedRecord{topic: r.Topic, key: string(r.Key), offset: r.Offset, rec: weak.Make(r)}
	if len(r.Value) > 0 {
		fr.value = weak.Make(&r.Value[0])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, fr)
}

// alive collects garbage, then lists, of the fetched records of topic
// that keep says to look at, those still reachable and those whose value
// bytes are; n is how many it looked at.
func (f *fetched) alive(topic string, keep func(offset int64) bool) (n int, recs, values []string) {
	for range 4 {
		runtime.GC()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.recs {
		if r.topic != topic || !keep(r.offset) {
			continue
		}
		n++
		name := fmt.Sprintf("%q@%d", r.key, r.offset)
		if r.rec.Value() != nil {
			recs = append(recs, name)
		}
		if r.value.Value() != nil {
			values = append(values, name)
		}
	}
	return n, recs, values
}

// holdingArgo is a fakeArgo whose Apply of one object waits until
// released, having said that it started.
type holdingArgo struct {
	*fakeArgo
	name     string
	started  chan struct{}
	released chan struct{}
}

func (h *holdingArgo) Apply(ctx context.Context, obj *spoke.Object) error {
	if obj.Name == h.name {
		close(h.started)
		select {
		case <-h.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.fakeArgo.Apply(ctx, obj)
}

// TestAgentKeepsNoRecordItPassedOver runs an agent on a config partition
// that other clusters share, as in a fleet: the hub writes their changes
// in batches, in transactions and not, and the agent passes over them.
// While it applies its own next change, which comes after them, it must
// keep none of theirs alive, nor the batches they lie in: it does not
// commit their offsets at once (a write of its state each time), and
// what it holds until it does must not be their records. Once its offset
// is committed past all of them, it keeps none of its own either.
func TestAgentKeepsNoRecordItPassedOver(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "passing"
	part := events.NewPartitioner(nil).PartitionOf(cluster, 2)
	var others []string
	for i := 0; len(others) < 20; i++ {
		if c := fmt.Sprintf("neighbour-%d", i); events.NewPartitioner(nil).PartitionOf(c, 2) == part {
			others = append(others, c)
		}
	}
	hook := &fetched{}
	store := newMemStore()
	a := &agent{cluster: cluster, argo: &fakeArgo{applied: map[string]int64{}}}
	argo := &holdingArgo{fakeArgo: a.argo, name: "last", started: make(chan struct{}), released: make(chan struct{})}
	a.run, err = spoke.New(cluster, keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t)), kgo.WithHooks(hook)},
		argo, noApps{}, store, spoke.WithTopics(f.topics))
	if err != nil {
		t.Fatal(err)
	}
	defer a.start(t)()
	f.publish(f.prod, f.upsert(cluster, "first", 1))
	waitApplied(t, a, "argocd/first")

	theirs := func(name string) []*event.Event {
		var es []*event.Event
		for _, c := range others {
			for j := range 5 {
				es = append(es, f.upsert(c, fmt.Sprintf("%s-%d", name, j), 1))
			}
		}
		return es
	}
	from := f.configEnd(t, cluster)
	if _, err := f.configWriter("rollout").Write(t.Context(), theirs("txn")...); err != nil {
		t.Fatal(err)
	}
	f.publish(f.prod, theirs("plain")...)
	to := f.configEnd(t, cluster)
	f.publish(f.prod, f.upsert(cluster, "last", 1))
	<-argo.started
	passed := func(offset int64) bool { return offset >= from && offset < to }
	n, recs, values := hook.alive(f.topics[events.TopicConfig], passed)
	if n < 2*len(others)*5 || len(recs) > 0 || len(values) > 0 {
		t.Errorf("while applying its own change, of the %d records it passed over before it, the agent keeps %d alive (%v) and the batches of %d (%v); want at least %d records, none of them kept",
			n, len(recs), head(recs), len(values), head(values), 2*len(others)*5)
	}
	close(argo.released)

	waitApplied(t, a, "argocd/last")
	end := f.configEnd(t, cluster)
	eventually(t, "the agent never committed its offset to the partition's end", func() bool { return storedOffset(t, store) == end })
	n, recs, values = hook.alive(f.topics[events.TopicConfig], func(int64) bool { return true })
	if len(recs) > 0 || len(values) > 0 {
		t.Errorf("of the %d records it fetched, the settled agent keeps %d alive (%v) and the batches of %d (%v), want none",
			n, len(recs), head(recs), len(values), head(values))
	}
}

// head is the first few of names, for a message.
func head(names []string) []string { return slices.Clone(names[:min(len(names), 5)]) }
