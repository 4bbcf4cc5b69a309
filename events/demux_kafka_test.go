//go:build integration

package events_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestReaderAndFollowerShareOneClient runs a TrustFollower and a config
// Reader, as an agent does, on one client through a Demux. The hub key is
// rotated before the config events: the event signed by the new key is
// handled only if the follower got the trust topic's records, and the
// reader's records come through the same polls.
func TestReaderAndFollowerShareOneClient(t *testing.T) {
	r := newRig(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	oldKey, newKey := r.f.hub, newSigner(t)
	both, err := oldKey.Cosigner(newKey)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(s *events.Signer, e ...*event.Event) {
		t.Helper()
		p, err := events.NewProducer(r.client, s, r.topics)
		if err == nil {
			_, err = p.Publish(ctx, e...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	before, after := appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a")
	publish(oldKey, before)
	publish(both, keyRotated(t, oldKey, newKey))
	publish(newKey, after)

	cl := kafkatest.Client(t, slices.Concat(events.ProducerOpts(nil), events.ReaderOpts(), events.TrustConsumeOpts(r.topics))...)
	demux := events.NewDemux(cl)
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", oldKey.Public()))
	trustDec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	trustIn, err := events.NewIntake(trustDec, nil)
	if err != nil {
		t.Fatal(err)
	}
	trust, config := r.topics[events.TopicTrust], r.topics[events.TopicConfig]
	follower, err := events.NewTrustFollower(cl, trust, trustIn, keys, events.WithFetchSource(demux.Topic(trust)))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := events.NewReader(cl, in, config, config+".shared", events.WithFetchSource(demux.Topic(config)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return follower.Run(gctx) })
	g.Go(func() error {
		return rd.Run(gctx, func(_ context.Context, d *events.Decoded) error {
			mu.Lock()
			defer mu.Unlock()
			handled[d.Event.ID()] = true
			if len(handled) == 2 {
				cancel()
			}
			return nil
		})
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !handled[before.ID()] || !handled[after.ID()] {
		t.Errorf("handled %v, want the events signed before (%s) and after (%s) the rotation", slices.Collect(maps.Keys(handled)), before.ID(), after.ID())
	}
}

// TestReaderResumesFromItsOffsetStore reads with offsets kept in a store
// rather than a group: a second reader with the same store starts after
// what the first one handled.
func TestReaderResumesFromItsOffsetStore(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	store := &events.MemoryOffsets{}
	r.publish("cluster-a", generations(t, "cluster-a", 1, 5)...)
	got := r.read(topic, "", r.decoder(), 5, events.WithOffsetStore(store))
	if got[4].Offset != 4 {
		t.Fatalf("first pass ended at offset %d", got[4].Offset)
	}
	second := generations(t, "cluster-a", 6, 3)
	r.publish("cluster-a", second...)
	got = r.read(topic, "", r.decoder(), 3, events.WithOffsetStore(store))
	if len(got) != 3 {
		t.Fatalf("second pass read %d events, want 3", len(got))
	}
	for i, d := range got {
		if d.Offset != int64(5+i) || d.Event.ID() != second[i].ID() {
			t.Errorf("second pass read %s at %d, want %s at %d", d.Event.ID(), d.Offset, second[i].ID(), 5+i)
		}
	}
	held, err := store.Offsets(t.Context(), topic, []int32{0})
	if err != nil || held[0] != 8 {
		t.Errorf("the store holds offset %d (%v), want 8", held[0], err)
	}
}
