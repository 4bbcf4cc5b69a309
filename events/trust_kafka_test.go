//go:build integration

package events_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// keyRotated is a trust event that replaces the hub key from with to.
func keyRotated(t *testing.T, from, to *events.Signer) *event.Event {
	t.Helper()
	e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRotated, "keys/"+from.KeyID(), "hub",
		schemas.KeyRotated{KeyID: from.KeyID(), Next: schemas.KeyRegistered{KeyID: to.KeyID(), Owner: "hub", Role: schemas.RoleHub,
			Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(to.Public())}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTrustFollowerRotatesTheHubKey runs a reader of the config topic whose
// keys come from the trust topic, as an agent's do, on the real broker. The
// hub key is rotated while it runs: an event signed by the old key before
// the rotation and one signed by the new key after it are handled; one
// signed by the old key after the rotation is dead-lettered as signed by a
// revoked key, and so is a trust event no anchor signed and a rotation the
// successor key did not sign. The successor is an anchor: a cluster key it
// registers is known. Nothing is judged before the follower has read the
// trust topic past it.
func TestTrustFollowerRotatesTheHubKey(t *testing.T) {
	r := newRig(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	oldKey, newKey := r.f.hub, newSigner(t)
	producer := func(s *events.Signer) *events.Producer {
		p, err := events.NewProducer(r.client, s, r.topics)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	publish := func(p *events.Producer, e *event.Event) {
		t.Helper()
		if _, err := p.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	before, after, stale := appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a")
	forged, err := events.New("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+r.f.stranger.KeyID(), "hub",
		schemas.KeyRegistered{KeyID: r.f.stranger.KeyID(), Owner: "hub", Role: schemas.RoleHub, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(r.f.stranger.Public())})
	if err != nil {
		t.Fatal(err)
	}
	both, err := oldKey.Cosigner(newKey)
	if err != nil {
		t.Fatal(err)
	}
	lone := keyRotated(t, oldKey, newSigner(t)) // its successor did not sign it
	joined, err := events.New("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+r.f.stranger.KeyID(), "cluster-z",
		schemas.KeyRegistered{KeyID: r.f.stranger.KeyID(), Owner: "cluster-z", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(r.f.stranger.Public())})
	if err != nil {
		t.Fatal(err)
	}
	publish(producer(oldKey), before)
	publish(producer(oldKey), lone)
	publish(producer(both), keyRotated(t, oldKey, newKey))
	publish(producer(r.f.stranger), forged)
	publish(producer(newKey), joined) // the successor is an anchor: it signs trust events
	publish(producer(newKey), after)
	publish(producer(oldKey), stale)

	anchor := events.HubAnchor("hub", oldKey.Public())
	keys := events.NewFollowingRegistry(anchor)
	dlqClient := kafkatest.Client(t, events.ProducerOpts(nil)...)
	dlq, err := events.NewDeadLetter(dlqClient, r.topics[events.TopicDeadLetter])
	if err != nil {
		t.Fatal(err)
	}
	trustDec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	trustIn, err := events.NewIntake(trustDec, dlq)
	if err != nil {
		t.Fatal(err)
	}
	follower, err := events.NewTrustFollower(kafkatest.Client(t, events.TrustConsumeOpts(r.topics)...), r.topics[events.TopicTrust], trustIn, keys)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	rd := newReader(t, r, dec, r.topics[events.TopicConfig], "rotation")

	var mu sync.Mutex
	var handled []string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return follower.Run(gctx) })
	g.Go(func() error {
		return rd.Run(gctx, func(_ context.Context, d *events.Decoded) error {
			if !keys.Covers(d.LogTime) {
				return events.Fatal(errors.New("judged before the trust topic was read past it"))
			}
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, d.Event.ID())
			return nil
		})
	})
	dead := consumeRaw(t, r.topics[events.TopicDeadLetter], 3)
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, rec := range dead {
		reasons[header(rec, "ce_id")] = header(rec, events.HeaderDLQReason)
	}
	want := map[string]string{stale.ID(): "revoked_key", forged.ID(): "unknown_key", lone.ID(): "not_authorized"}
	for id, reason := range want {
		if reasons[id] != reason {
			t.Errorf("dead letters %v: want %s dead-lettered as %s", reasons, id, reason)
		}
	}
	if k, ok := keys.Key(r.f.stranger.KeyID()); !ok || k.Owner != "cluster-z" {
		t.Errorf("key %s = %+v: want it registered to cluster-z by the successor anchor", r.f.stranger.KeyID(), k)
	}
	if k, ok := keys.Key(newKey.KeyID()); !ok || !k.Anchor {
		t.Errorf("successor key = %+v: want an anchor", k)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(handled, []string{before.ID(), after.ID()}) {
		t.Errorf("handled %v, want the event before the rotation (%s) and the one signed by the new key (%s)", handled, before.ID(), after.ID())
	}
}

// header returns the value of rec's header key, or "".
func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestTrustFollowerFollowsOnlyItsOwners runs a follower of the hub's trust
// events only, as an agent's is: the hub's key rotation is applied, and a
// cluster's key, validly registered, is passed over unread.
func TestTrustFollowerFollowsOnlyItsOwners(t *testing.T) {
	r := newRig(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	oldKey, newKey := r.f.hub, newSigner(t)
	both, err := oldKey.Cosigner(newKey)
	if err != nil {
		t.Fatal(err)
	}
	joined, err := events.New("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+r.f.stranger.KeyID(), "cluster-z",
		schemas.KeyRegistered{KeyID: r.f.stranger.KeyID(), Owner: "cluster-z", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(r.f.stranger.Public())})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		s *events.Signer
		e *event.Event
	}{{oldKey, joined}, {both, keyRotated(t, oldKey, newKey)}} {
		prod, err := events.NewProducer(r.client, p.s, r.topics)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prod.Publish(ctx, p.e); err != nil {
			t.Fatal(err)
		}
	}
	published := time.Now()
	for _, owners := range [][]string{nil, {"hub"}} {
		keys := events.NewFollowingRegistry(events.HubAnchor("hub", oldKey.Public()))
		dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
		if err != nil {
			t.Fatal(err)
		}
		in, err := events.NewIntake(dec, nil)
		if err != nil {
			t.Fatal(err)
		}
		var opts []events.Option
		if owners != nil {
			opts = append(opts, events.WithTrustOwners(owners...))
		}
		follower, err := events.NewTrustFollower(kafkatest.Client(t, events.TrustConsumeOpts(r.topics)...), r.topics[events.TopicTrust], in, keys, opts...)
		if err != nil {
			t.Fatal(err)
		}
		fctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- follower.Run(fctx) }()
		err = keys.WaitCovers(ctx, published)
		stop()
		if err := errors.Join(err, <-done); err != nil {
			t.Fatal(err)
		}
		known := map[string]bool{}
		for _, k := range keys.Keys() {
			known[k.ID] = true
		}
		if !known[newKey.KeyID()] {
			t.Errorf("owners %v: the hub's new key is not known", owners)
		}
		if want := owners == nil; known[r.f.stranger.KeyID()] != want {
			t.Errorf("owners %v: cluster-z's key known = %v, want %v", owners, !want, want)
		}
	}
}
