//go:build integration

package events_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// lastStable is the last stable offset of topic's partition p: the end a
// read_committed reader can reach, transaction markers included.
func lastStable(t *testing.T, topic string, p int32) int64 {
	t.Helper()
	ends, err := kadm.NewClient(kafkatest.Client(t)).ListCommittedOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(topic, p)
	if !ok || end.Err != nil {
		t.Fatalf("end of %s/%d: %v", topic, p, end.Err)
	}
	return end.Offset
}

// TestReaderCommitsPastTransactionMarkers writes config events the way the
// hub does, in transactions (ConfigWriter), and reads them with a Reader:
// the committed offset must reach the partition's last stable offset,
// past the last commit marker, so that the lag an agent reports from it
// reaches zero.
func TestReaderCommitsPastTransactionMarkers(t *testing.T) {
	r := newRig(t, 1, nil)
	w, err := events.NewConfigWriter(kafkatest.Client(t, append(events.ProducerOpts(nil),
		kgo.TransactionalID("txn."+r.topics[events.TopicConfig]))...), r.f.hub, r.topics)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Write(t.Context(), appUpsert(t, "cluster-a")); err != nil {
			t.Fatal(err)
		}
	}
	topic := r.topics[events.TopicConfig]
	group := topic + ".txn"
	r.read(topic, group, r.decoder(), 3)
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, err := kadm.NewClient(kafkatest.Client(t)).FetchOffsets(t.Context(), group)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup(topic, 0)
		// The coordinator writes the commit markers after EndTransaction
		// returns, so the last stable offset is read anew each time: three
		// records and three markers end at 6.
		end := lastStable(t, topic, 0)
		if o.At == end && end == 6 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want the last stable offset %d: a reader that stops short of the marker never shows zero lag", o.At, end)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTrustFollowerReachesTheEndOfTransactions writes a trust event in a
// committed transaction. The follower must see that it has read to the
// end, past the commit marker, and advance the registry's coverage:
// otherwise every reader that follows it waits forever.
func TestTrustFollowerReachesTheEndOfTransactions(t *testing.T) {
	r := newRig(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec := strangerRegistered(ctx, t, r, "hub")
	txn := kafkatest.Client(t, append(events.ProducerOpts(nil), kgo.TransactionalID("txn."+rec.Topic))...)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	written := time.Now()

	anchor := events.HubAnchor("hub", r.f.hub.Public())
	keys := events.NewFollowingRegistry(anchor)
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := events.NewTrustFollower(kafkatest.Client(t, events.TrustConsumeOpts(r.topics)...), rec.Topic, in, keys,
		events.WithClockMargin(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitCtx, waitCancel := context.WithTimeout(ctx, 20*time.Second)
	defer waitCancel()
	covered := keys.WaitCovers(waitCtx, written)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if covered != nil {
		t.Fatalf("the registry never covered a time after the transaction: %v", covered)
	}
	if k, ok := keys.Key(r.f.stranger.KeyID()); !ok || k.Owner != "cluster-z" {
		t.Errorf("the registered key is unknown: %+v", k)
	}
}

// TestTrustFollowerWaitsForAnOpenTransaction: a trust event appended in a
// transaction still open has its log time already, and becomes readable
// only at the commit. The follower must not cover that time until it has
// read the event: a reader would judge records after it without the key.
func TestTrustFollowerWaitsForAnOpenTransaction(t *testing.T) {
	r := newRig(t, 1, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec := strangerRegistered(ctx, t, r, "cluster-z")
	txn := kafkatest.Client(t, append(events.ProducerOpts(nil), kgo.TransactionalID("open."+rec.Topic))...)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	appended := time.Now()

	keys := events.NewFollowingRegistry(events.HubAnchor("hub", r.f.hub.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := events.NewTrustFollower(kafkatest.Client(t, events.TrustConsumeOpts(r.topics)...), rec.Topic, in, keys,
		events.WithClockMargin(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitCtx, waitCancel := context.WithTimeout(ctx, time.Second)
	defer waitCancel()
	if err := keys.WaitCovers(waitCtx, appended); err == nil {
		_, known := keys.Key(r.f.stranger.KeyID())
		t.Errorf("the registry covers the time after the open transaction's event (key known: %t)", known)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := keys.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := keys.Key(r.f.stranger.KeyID()); !ok {
		t.Error("the key registered in the committed transaction is unknown")
	}
}

// strangerRegistered is the trust record, signed by the hub, that
// registers r's stranger key to cluster-z, with partitionkey key.
func strangerRegistered(ctx context.Context, t *testing.T, r *rig, key string) *kgo.Record {
	t.Helper()
	e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+r.f.stranger.KeyID(), key,
		schemas.KeyRegistered{KeyID: r.f.stranger.KeyID(), Owner: "cluster-z", Role: schemas.RoleCluster,
			Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(r.f.stranger.Public())})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.f.hub.Sign(ctx, e); err != nil {
		t.Fatal(err)
	}
	rec, err := events.EventRecord(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	rec.Topic = r.topics[events.TopicTrust]
	return rec
}
