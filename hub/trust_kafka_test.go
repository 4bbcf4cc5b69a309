//go:build integration

package hub_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// The attacks on a cluster's keys: keys reach the trust topic only with a
// decided registration, re-registering rotates the old keys out, and
// deregistering ends every key the cluster had. Each is judged as an
// outside reader judges it: a registry built from the committed trust
// topic alone, and a status event signed with the key in question.

// spokeKeys is a cluster's key pair as argosy-spoke keygen makes it.
type spokeKeys struct {
	signer           *events.Signer
	signing, sealing string
}

func newSpokeKeys(t testing.TB) spokeKeys {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := events.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	return spokeKeys{signer: s, signing: base64.StdEncoding.EncodeToString(s.Public()), sealing: base64.StdEncoding.EncodeToString(sk.Public[:])}
}

// trustKeys builds the key set an outside reader builds from the committed
// trust topic, pinning only the hub's key.
func (r *rig) trustKeys() *events.Registry {
	r.t.Helper()
	reg := events.NewRegistry(events.HubAnchor("hub", r.signer.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(reg.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rec := range r.records(events.TopicTrust) {
		d, err := dec.Decode(r.t.Context(), rec)
		if err != nil {
			r.t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
		if err := reg.Apply(d); err != nil {
			r.t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
	}
	return reg
}

// heartbeat appends a heartbeat for cluster signed by signer, as a spoke
// (or a thief of its key) would, and returns its record.
func (r *rig) heartbeat(signer *events.Signer, cluster string) *kgo.Record {
	r.t.Helper()
	p, err := events.NewProducer(kafkatest.Client(r.t, events.ProducerOpts(nil)...), signer, r.topics)
	if err != nil {
		r.t.Fatal(err)
	}
	e, err := events.New("argosy-spoke/"+cluster, events.TypeHeartbeat, events.Subject{Cluster: cluster}.String(), cluster,
		schemas.Heartbeat{Cluster: cluster, AgentVersion: "test", Mode: "managed", Seq: 1})
	if err != nil {
		r.t.Fatal(err)
	}
	recs, err := p.Publish(r.t.Context(), e)
	if err != nil {
		r.t.Fatal(err)
	}
	// Read back, with the broker's append time as readers see it.
	for _, rec := range r.records(events.TopicStatus) {
		if rec.Partition == recs[0].Partition && rec.Offset == recs[0].Offset {
			return rec
		}
	}
	r.t.Fatalf("heartbeat at %d/%d not read back", recs[0].Partition, recs[0].Offset)
	return nil
}

// accepts reports whether a reader with keys takes rec.
func (r *rig) accepts(keys *events.Registry, rec *kgo.Record) error {
	r.t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(r.topics))
	if err != nil {
		r.t.Fatal(err)
	}
	_, err = dec.Decode(r.t.Context(), rec)
	return err
}

func registerWith(t testing.TB, c *api.Client, name string, k spokeKeys, expected *int64, overlap string) error {
	t.Helper()
	_, err := c.RegisterCluster(t.Context(), name, api.ClusterRequest{Labels: map[string]string{"env": "prod"},
		SigningKey: k.signing, SealingKey: k.sealing, ExpectedGeneration: expected, KeyOverlap: overlap}, api.WriteOptions{})
	return err
}

// TestRefusedRegistrationPlantsNoKey registers a cluster, then tries to
// register it again with other keys as a new cluster: the 409 must leave
// no key on the trust topic, and a heartbeat signed with the refused key
// must be refused by every reader.
func TestRefusedRegistrationPlantsNoKey(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	owner, attacker := newSpokeKeys(t), newSpokeKeys(t)
	zero := int64(0)
	if err := registerWith(t, root, "prod", owner, &zero, ""); err != nil {
		t.Fatal(err)
	}
	if err := registerWith(t, root, "prod", attacker, &zero, ""); api.StatusOf(err) != http.StatusConflict {
		t.Fatalf("second registration = %v, want 409", err)
	}
	keys := r.trustKeys()
	if k, ok := keys.Key(attacker.signer.KeyID()); ok {
		t.Errorf("the refused registration's key is on the trust topic: %+v", k)
	}
	if err := r.accepts(keys, r.heartbeat(attacker.signer, "prod")); err == nil {
		t.Error("a heartbeat signed with the refused registration's key was accepted")
	}
	if err := r.accepts(keys, r.heartbeat(owner.signer, "prod")); err != nil {
		t.Errorf("the registered key's heartbeat: %v", err)
	}
}

// TestRacingJoinsRegisterOneKeyPair races six joins with one join token,
// spread over two hub replicas: one wins, and only its keys reach the
// trust topic.
func TestRacingJoinsRegisterOneKeyPair(t *testing.T) {
	r := newRig(t, 1)
	urls := []string{r.start(), r.start()}
	root := r.client(urls[0], "root")
	res, err := root.RegisterCluster(t.Context(), "edge", api.ClusterRequest{}, api.WriteOptions{})
	if err != nil || res.JoinToken == "" {
		t.Fatalf("register without keys = %+v, %v", res, err)
	}
	var anons []*api.Client
	for _, u := range urls {
		anon, err := api.NewClient(u, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		anons = append(anons, anon)
	}
	const racers = 6
	ks := make([]spokeKeys, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range ks {
		ks[i] = newSpokeKeys(t)
		wg.Go(func() {
			_, errs[i] = anons[i%2].Join(t.Context(), "edge", api.JoinRequest{Token: res.JoinToken, SigningKey: ks[i].signing, SealingKey: ks[i].sealing})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("joins %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case api.StatusOf(err) != http.StatusConflict && api.StatusOf(err) != http.StatusUnauthorized:
			t.Errorf("join %d = %v, want 409 or 401", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no join succeeded: %v", errs)
	}
	keys := r.trustKeys()
	n := 0
	for _, k := range keys.Keys() {
		if k.Owner == "edge" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d keys of edge on the trust topic, want the winner's two", n)
	}
	for i, k := range ks {
		err := r.accepts(keys, r.heartbeat(k.signer, "edge"))
		if i == winner && err != nil {
			t.Errorf("the winning join's heartbeat: %v", err)
		}
		if i != winner && err == nil {
			t.Errorf("a heartbeat signed with losing join %d's key was accepted", i)
		}
	}
}

// TestReregisterRotatesKeys rotates a cluster's keys by registering it
// again with new ones: without an overlap the old key signs nothing from
// the rotation on; with one, it signs until the overlap ends, unless new
// keys come again, which end it at once. Then deregistering ends every
// key the cluster ever had.
func TestReregisterRotatesKeys(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	k1, k2, k3 := newSpokeKeys(t), newSpokeKeys(t), newSpokeKeys(t)
	if err := registerWith(t, root, "prod", k1, nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := registerWith(t, root, "prod", k2, nil, ""); err != nil {
		t.Fatal(err)
	}
	keys := r.trustKeys()
	if err := r.accepts(keys, r.heartbeat(k1.signer, "prod")); err == nil {
		t.Errorf("a heartbeat signed with the rotated-out key = %v, want refused", err)
	}
	if err := r.accepts(keys, r.heartbeat(k2.signer, "prod")); err != nil {
		t.Errorf("the new key's heartbeat: %v", err)
	}

	if err := registerWith(t, root, "prod", k3, nil, "1h"); err != nil {
		t.Fatal(err)
	}
	keys = r.trustKeys()
	old, _ := keys.Key(k2.signer.KeyID())
	if old.Until.IsZero() || old.Until.Sub(old.Since) < 59*time.Minute || old.Until.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Errorf("the key rotated out with a 1h overlap is valid %s to %s, want until an hour after the rotation", old.Since, old.Until)
	}
	for _, k := range []spokeKeys{k2, k3} {
		if err := r.accepts(keys, r.heartbeat(k.signer, "prod")); err != nil {
			t.Errorf("during the overlap, key %s: %v", k.signer.KeyID(), err)
		}
	}

	// Keys again, with no overlap, as after k2 leaked: k3 is rotated out
	// and k2, still in the last rotation's overlap, ends at once too.
	k4 := newSpokeKeys(t)
	if err := registerWith(t, root, "prod", k4, nil, ""); err != nil {
		t.Fatal(err)
	}
	keys = r.trustKeys()
	for _, k := range []spokeKeys{k2, k3} {
		if err := r.accepts(keys, r.heartbeat(k.signer, "prod")); err == nil {
			t.Errorf("after new keys without an overlap, a heartbeat signed with %s was accepted", k.signer.KeyID())
		}
	}

	if _, err := root.DeregisterCluster(t.Context(), "prod", "decommissioned", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	keys = r.trustKeys()
	for _, k := range []spokeKeys{k1, k2, k3, k4} {
		if err := r.accepts(keys, r.heartbeat(k.signer, "prod")); err == nil {
			t.Errorf("after deregistration, a heartbeat signed with %s was accepted", k.signer.KeyID())
		}
	}
	// A key that was revoked is not registered again.
	if err := registerWith(t, root, "prod", k4, nil, ""); api.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("registering a revoked key again = %v, want 400", err)
	}
}

// TestKeyOfAnotherCluster registers a key that another cluster holds:
// refused, so that one cluster's key never signs for another.
func TestKeyOfAnotherCluster(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	k := newSpokeKeys(t)
	if err := registerWith(t, root, "a", k, nil, ""); err != nil {
		t.Fatal(err)
	}
	err := registerWith(t, root, "b", k, nil, "")
	if api.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("registering cluster a's key for b = %v, want 400", err)
	}
	keys := r.trustKeys()
	if err := r.accepts(keys, r.heartbeat(k.signer, "b")); err == nil {
		t.Error("a's key signed for b")
	}
	for _, bad := range []string{"-1s", "169h", "soon"} {
		if err := registerWith(t, root, "a", newSpokeKeys(t), nil, bad); api.StatusOf(err) != http.StatusBadRequest {
			t.Errorf("keyOverlap %q = %v, want 400", bad, err)
		}
	}
}

// TestReplayedRecordAfterDeregistration captures a cluster's genuine
// heartbeat and appends it again, byte for byte, as anyone who may
// produce to the status topic can, after the cluster was deregistered:
// readers refuse it, since no key of the cluster is valid any more.
func TestReplayedRecordAfterDeregistration(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	k := newSpokeKeys(t)
	if err := registerWith(t, root, "gone", k, nil, ""); err != nil {
		t.Fatal(err)
	}
	captured := r.heartbeat(k.signer, "gone")
	if err := r.accepts(r.trustKeys(), captured); err != nil {
		t.Fatalf("the genuine heartbeat: %v", err)
	}
	if _, err := root.DeregisterCluster(t.Context(), "gone", "", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	replay := &kgo.Record{Topic: captured.Topic, Key: captured.Key, Value: captured.Value, Headers: captured.Headers}
	cl := kafkatest.Client(t, events.ProducerOpts(nil)...)
	if err := cl.ProduceSync(t.Context(), replay).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var again *kgo.Record
	for _, rec := range r.records(events.TopicStatus) {
		if rec.Partition == replay.Partition && rec.Offset == replay.Offset {
			again = rec
		}
	}
	if again == nil {
		t.Fatal("the replay was not read back")
	}
	if err := r.accepts(r.trustKeys(), again); err == nil {
		t.Error("a heartbeat of a deregistered cluster, appended again, was accepted")
	}
}
