//go:build integration

package events_test

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// trustRig is a trust topic with the hub's key as anchor, and followers of
// it, on the rig's brokers.
type trustRig struct {
	*rig
	g *errgroup.Group
}

// follow starts a follower of the trust topic that feeds a new following
// registry, judging with margin, until ctx ends; its client takes opts
// besides TrustConsumeOpts.
func (tr trustRig) follow(ctx context.Context, margin time.Duration, opts ...kgo.Opt) *events.Registry {
	tr.t.Helper()
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", tr.f.hub.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(tr.topics))
	if err != nil {
		tr.t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		tr.t.Fatal(err)
	}
	f, err := events.NewTrustFollower(tr.dial(tr.t, append(events.TrustConsumeOpts(tr.topics), opts...)...), tr.topics[events.TopicTrust], in, keys,
		events.WithClockMargin(margin))
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.g.Go(func() error { return f.Run(ctx) })
	return keys
}

// trustEvent appends a trust event about key k of cluster, signed by the
// hub, and returns its record.
func (tr trustRig) trustEvent(ctx context.Context, typ, cluster string, k *events.Signer, data any) *kgo.Record {
	tr.t.Helper()
	e, err := events.New("//argosy.dev/hub/test", typ, "keys/"+k.KeyID(), cluster, data)
	if err != nil {
		tr.t.Fatal(err)
	}
	recs, err := tr.prod.Publish(ctx, e)
	if err != nil {
		tr.t.Fatal(err)
	}
	return recs[0]
}

// register registers k as cluster-x's key.
func (tr trustRig) register(ctx context.Context, k *events.Signer) *kgo.Record {
	const cluster = "cluster-x"
	return tr.trustEvent(ctx, events.TypeKeyRegistered, cluster, k, schemas.KeyRegistered{KeyID: k.KeyID(), Owner: cluster,
		Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(k.Public())})
}

// intake returns an intake for status records judged by keys.
func (tr trustRig) intake(keys *events.Registry) *events.Intake {
	tr.t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(tr.topics))
	if err != nil {
		tr.t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		tr.t.Fatal(err)
	}
	return in
}

// decide takes rec through in: "accepted", or the reason it was refused.
func decide(ctx context.Context, t *testing.T, in *events.Intake, rec *kgo.Record) string {
	t.Helper()
	d, err := in.Take(ctx, rec)
	switch {
	case err == nil && d != nil:
		return "accepted"
	case events.IsPoison(err):
		return events.Reason(err)
	default:
		t.Fatalf("record %d: %v", rec.Offset, err)
		return ""
	}
}

// liveDecisions judges every status record with in as it arrives, until
// ctx ends, and returns the decisions by offset (one partition: one
// cluster's records).
func (tr trustRig) liveDecisions(ctx context.Context, t *testing.T, in *events.Intake) func(int64) string {
	out := map[int64]string{}
	var mu sync.Mutex
	get := func(offset int64) string {
		mu.Lock()
		defer mu.Unlock()
		return out[offset]
	}
	cl := tr.dial(t, kgo.ConsumeTopics(tr.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	tr.g.Go(func() error {
		for ctx.Err() == nil {
			for _, rec := range cl.PollFetches(ctx).Records() {
				d := decide(ctx, t, in, rec)
				mu.Lock()
				out[rec.Offset] = d
				mu.Unlock()
			}
		}
		return nil
	})
	return get
}

// TestCutRacesARevocation writes a cluster's heartbeats, each naming how
// far its writer had read the trust topic, while the hub revokes the
// cluster's key: some name the offset their writer read last, some a
// stale one taken before the revocation (as a writer whose follower is
// behind would, or a holder of the key). A live reader judges each as it
// arrives, while its follower reads the revocation; a rebuild, from a
// registry that read the whole trust topic, judges them again. Every
// decision must be the same; both outcomes, and the concurrent case (an
// event appended after the revocation and accepted), must occur.
func TestCutRacesARevocation(t *testing.T) {
	counts, concurrent := raceARevocation(t, newRig(t, 1, nil), nil, nil)
	t.Logf("decisions %v, %d accepted after the revocation", counts, concurrent)
	if counts["accepted"] == 0 || counts["revoked_key"] == 0 || concurrent == 0 {
		t.Errorf("decisions %v, %d accepted after the revocation: want both outcomes and the concurrent case", counts, concurrent)
	}
}

// raceARevocation runs TestCutRacesARevocation's race on r's topics: the
// live reader's trust follower has a client that takes live, the
// rebuild's one that takes rebuilt. It fails t on every decision the two
// judge differently, and returns the rebuild's decisions counted and how
// many heartbeats appended after the revocation it accepted.
func raceARevocation(t *testing.T, r *rig, live, rebuilt []kgo.Opt) (counts map[string]int, concurrent int) {
	const margin, n = 300 * time.Millisecond, 120
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	tr := trustRig{rig: r, g: g}
	key := newSigner(t)
	tr.register(ctx, key)
	writerKeys := tr.follow(gctx, margin)
	if err := writerKeys.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	liveCtx, liveStop := context.WithCancel(gctx)
	defer liveStop()
	judged := tr.liveDecisions(liveCtx, t, tr.intake(tr.follow(gctx, margin, live...)))
	tr.writeRace(ctx, t, key, writerKeys, n)
	recs := consumeFrom(t, r.dial, r.topics[events.TopicStatus], n)
	trust := consumeFrom(t, r.dial, r.topics[events.TopicTrust], 2)
	revokedAt := trust[len(trust)-1].Timestamp

	rebuiltKeys := tr.follow(gctx, margin, rebuilt...)
	if err := rebuiltKeys.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	again := tr.intake(rebuiltKeys)
	counts = map[string]int{}
	for _, rec := range recs {
		d := decide(ctx, t, again, rec)
		counts[d]++
		if d == "accepted" && rec.Timestamp.After(revokedAt) {
			concurrent++
		}
		for judged(rec.Offset) == "" && ctx.Err() == nil { // judged live by now, or about to be
			time.Sleep(10 * time.Millisecond)
		}
		if l := judged(rec.Offset); l != d {
			t.Errorf("heartbeat at offset %d, %s after the revocation: live %s, rebuilt %s", rec.Offset, rec.Timestamp.Sub(revokedAt), l, d)
		}
	}
	liveStop()
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return counts, concurrent
}

// writeRace writes n heartbeats of cluster-x signed by key, and revokes
// key after the first third: every other heartbeat names the trust offset
// writerKeys has read when it is written, the others the one it had read
// before the first, which the revocation makes stale.
func (tr trustRig) writeRace(ctx context.Context, t *testing.T, key *events.Signer, writerKeys *events.Registry, n int) {
	t.Helper()
	stale, _ := writerKeys.TrustRead()
	prods := map[bool]*events.Producer{}
	for _, old := range []bool{false, true} {
		s := key.WithTrustOffset(writerKeys.TrustRead)
		if old {
			s = key.WithTrustOffset(func() (int64, bool) { return stale, true })
		}
		p, err := events.NewProducer(tr.client, s, tr.topics)
		if err != nil {
			t.Fatal(err)
		}
		prods[old] = p
	}
	for i := range n {
		if i == n/3 {
			tr.trustEvent(ctx, events.TypeKeyRevoked, "cluster-x", key, schemas.KeyRevoked{KeyID: key.KeyID(), Reason: "lost"})
		}
		if _, err := prods[i%2 == 1].Publish(ctx, heartbeat(t, "cluster-x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCutNeedsNoMargin: with a clock margin of an hour, an event that names
// the trust offset its writer had read is judged at once, by a reader
// whose follower reads that far, and a forged one that names an offset
// before its key's registration is refused; an event that names none
// waits the hour.
func TestCutNeedsNoMargin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	tr := trustRig{rig: newRig(t, 1, nil), g: g}
	key := newSigner(t)
	registered := tr.register(ctx, key)
	in := tr.intake(tr.follow(gctx, time.Hour))
	for _, s := range []*events.Signer{
		key.WithTrustOffset(func() (int64, bool) { return registered.Offset + 1, true }), // the registration read
		key.WithTrustOffset(func() (int64, bool) { return registered.Offset, true }),     // not read
		key, // no offset named
	} {
		p, err := events.NewProducer(tr.client, s, tr.topics)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Publish(ctx, heartbeat(t, "cluster-x")); err != nil {
			t.Fatal(err)
		}
	}
	recs := consumeRaw(t, tr.topics[events.TopicStatus], 3)
	if d := decide(ctx, t, in, recs[0]); d != "accepted" {
		t.Errorf("an event naming the offset after its key's registration: %s, want accepted", d)
	}
	if d := decide(ctx, t, in, recs[1]); d != "unknown_key" {
		t.Errorf("an event naming an offset before its key's registration: %s, want unknown_key", d)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 3*time.Second)
	defer waitCancel()
	if d, err := in.Take(waitCtx, recs[2]); err == nil {
		t.Errorf("an event naming no trust offset was judged (%v) before the margin of an hour", d != nil)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestCutWaitsForAnOpenRevocation revokes a cluster's key in a transaction
// that stays open for longer than the margin, as a hub whose commit is slow
// on a busy broker does, and has the cluster write a heartbeat, naming how
// far it had read the trust topic, more than the margin after the
// revocation was appended. The revocation is in the heartbeat's cut (it
// was appended the margin before), so a rebuild refuses the heartbeat; a
// live reader must not judge it while the revocation is still undecided,
// although the last stable offset shows its follower at the end.
func TestCutWaitsForAnOpenRevocation(t *testing.T) {
	const margin = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	tr := trustRig{rig: newRig(t, 1, nil), g: g}
	key := newSigner(t)
	tr.register(ctx, key)
	liveKeys := tr.follow(gctx, margin)
	if err := liveKeys.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	live := tr.intake(liveKeys)

	e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRevoked, "keys/"+key.KeyID(), "cluster-x",
		schemas.KeyRevoked{KeyID: key.KeyID(), Reason: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	txn := kafkatest.Client(t, append(events.ProducerOpts(nil), kgo.TransactionalID("txn."+tr.topics[events.TopicTrust]))...)
	p, err := events.NewProducer(txn, tr.f.hub, tr.topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * margin) // the heartbeat comes more than the margin after the revocation
	hp, err := events.NewProducer(tr.client, key.WithTrustOffset(liveKeys.TrustRead), tr.topics)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hp.Publish(ctx, heartbeat(t, "cluster-x")); err != nil {
		t.Fatal(err)
	}
	rec := consumeRaw(t, tr.topics[events.TopicStatus], 1)[0]

	// Judge it live; the transaction commits once the live reader has
	// judged, or after a while if it waits (as it must).
	judged := make(chan string, 1)
	g.Go(func() error { judged <- decide(gctx, t, live, rec); return nil })
	var liveDecision string
	select {
	case liveDecision = <-judged:
	case <-time.After(10 * margin):
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if liveDecision == "" {
		liveDecision = <-judged
	}

	rebuilt := tr.follow(gctx, margin)
	if err := rebuilt.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	again := decide(ctx, t, tr.intake(rebuilt), rec)
	if liveDecision != again || again != "revoked_key" {
		t.Errorf("a heartbeat appended %s after its key's revocation was: live %s, rebuilt %s; want revoked_key both",
			3*margin, liveDecision, again)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestCutJudgesBesideAnOpenTransaction: while a transaction on the trust
// topic is open, a reader still judges an event appended less than the
// margin after the transaction's first record, since that record and
// every later one count in no cut of the event unless the event names an
// offset past them. A fleet that joins clusters all day keeps
// transactions open on the trust topic most of the time; readers must
// not wait for a moment when none is.
func TestCutJudgesBesideAnOpenTransaction(t *testing.T) {
	// The reader can judge beside the open transaction only if it looks
	// at the trust topic's end within the margin after the revocation's
	// append; reading the heartbeat back took longer than 2 s once, under
	// the race detector beside other packages' tests.
	const margin = 10 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	tr := trustRig{rig: newRig(t, 1, nil), g: g}
	key := newSigner(t)
	tr.register(ctx, key)
	liveKeys := tr.follow(gctx, margin)
	if err := liveKeys.WaitCovers(ctx, time.Now()); err != nil { // read to the end: it names its offset
		t.Fatal(err)
	}
	e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRevoked, "keys/"+key.KeyID(), "cluster-x",
		schemas.KeyRevoked{KeyID: key.KeyID(), Reason: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	txn := kafkatest.Client(t, append(events.ProducerOpts(nil), kgo.TransactionalID("txn."+tr.topics[events.TopicTrust]))...)
	p, err := events.NewProducer(txn, tr.f.hub, tr.topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	hp, err := events.NewProducer(tr.client, key.WithTrustOffset(liveKeys.TrustRead), tr.topics)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hp.Publish(ctx, heartbeat(t, "cluster-x")); err != nil {
		t.Fatal(err)
	}
	rec := consumeRaw(t, tr.topics[events.TopicStatus], 1)[0]
	// Far less than the transaction's timeout, far more than a look.
	openCtx, openCancel := context.WithTimeout(ctx, 20*time.Second)
	defer openCancel()
	d, err := tr.intake(liveKeys).Take(openCtx, rec)
	if err != nil || d == nil {
		t.Errorf("a heartbeat appended just after a revocation in an open transaction, naming an offset before it: %v while the transaction was open, want accepted at once", err)
	}
	// A reader that starts while the transaction is open judges too, but
	// does not name its trust offset: the open transaction may hold its
	// own key's registration (an agent that starts as its join commits).
	started := tr.follow(gctx, margin)
	if d, err := tr.intake(started).Take(openCtx, rec); err != nil || d == nil {
		t.Errorf("a reader started while the transaction was open: %v, want accepted", err)
	}
	if n, ok := started.TrustRead(); ok {
		t.Errorf("a reader started while a transaction was open names trust offset %d, short of the transaction", n)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	rebuilt := tr.follow(gctx, margin)
	if err := rebuilt.WaitCovers(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if again := decide(ctx, t, tr.intake(rebuilt), rec); again != "accepted" {
		t.Errorf("rebuilt: %s, want accepted (the revocation was concurrent)", again)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
