//go:build integration

package pyreader

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/internal/golden"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

const (
	hubName = "hub"
	// east is partitioned by its name; pinned is pinned to a partition
	// its name would not give it, and rotates its key half way.
	east   = "east-1"
	pinned = "pinned-7"
)

// workload writes to every topic what the hub and two agents would.
type workload struct {
	t      *testing.T
	topics events.Topics
	pins   map[string]int32
	hub    *events.Signer
	// keys of the clusters: pinned's first key is rotated to next;
	// spare is registered and revoked.
	keys        map[string]*events.Signer
	next, spare *events.Signer
	// written counts the records written, by topic role and event type,
	// as the Python reader reports what it read.
	written map[string]map[string]int
	// refused lists the records every reader must refuse, as
	// "topic/partition@offset": signed by a key a refused registration
	// planted, by a key rotated out, or by a key of a deregistered cluster;
	// one on the trust topic, by the hub's key rotated out.
	refused []string
	// unapplied lists the trust records every reader must refuse to
	// apply, though their signature is good: a rotation to another
	// cluster's key.
	unapplied []string
}

func newWorkload(t *testing.T, configPartitions, statusPartitions int32) *workload {
	w := &workload{t: t, topics: events.DefaultTopics(kafkatest.Prefix(t)), keys: map[string]*events.Signer{},
		written: map[string]map[string]int{}}
	w.hub, w.next, w.spare = signer(t), signer(t), signer(t)
	w.keys[east], w.keys[pinned] = signer(t), signer(t)
	// A pin the partitioner would not choose, so the reader must know it.
	natural := events.NewPartitioner(nil).PartitionOf(pinned, configPartitions)
	w.pins = map[string]int32{pinned: (natural + 1) % configPartitions}
	ensureTopics(t, w.topics, configPartitions, statusPartitions)
	return w
}

func signer(t *testing.T) *events.Signer {
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run writes the workload: keys, then config and its desired-state
// copies, then each cluster's status and deployments, one dead letter,
// key rotations in the middle (one with an overlap), a deregistered
// cluster's keys revoked, the hub's audit, a rotation of the hub's key and
// what its successor signs; and records signed by keys that were not
// valid for them, which every reader must refuse.
func (w *workload) run(ctx context.Context) {
	t := w.t
	trust := w.producer(w.hub)
	for _, c := range []string{east, pinned} {
		w.publish(ctx, trust, w.keyEvent(events.TypeKeyRegistered, c, w.keys[c].KeyID(), keyRegistered(c, w.keys[c].Public())))
	}
	w.publish(ctx, trust, w.keyEvent(events.TypeKeyRegistered, east, w.spare.KeyID(), keyRegistered(east, w.spare.Public())))
	w.publish(ctx, trust, w.keyEvent(events.TypeKeyRevoked, east, w.spare.KeyID(), schemas.KeyRevoked{KeyID: w.spare.KeyID(), Reason: "test"}))
	// A registration the hub refused: its key was in a transaction that
	// was aborted, so no read-committed reader ever sees it.
	planted := signer(t)
	w.aborted(ctx, w.keyEvent(events.TypeKeyRegistered, east, planted.KeyID(), keyRegistered(east, planted.Public())))

	cw, err := events.NewConfigWriter(kafkatest.Client(t, append(events.ProducerOpts(w.pins),
		kgo.TransactionalID("txn."+w.topics[events.TopicConfig]))...), w.hub, w.topics)
	if err != nil {
		t.Fatal(err)
	}
	audit := w.producer(w.hub)
	for _, c := range []string{east, pinned} {
		es := w.samples(c, func(sp events.Spec) bool { return sp.Topic == events.TopicConfig })
		if _, err := cw.Write(ctx, es...); err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			w.count(events.TopicConfig, e.Type())
			switch e.Type() {
			case events.TypeOperationRequested:
			default:
				w.count(events.TopicDesired, e.Type())
			}
		}
		for _, e := range w.samples(c, func(sp events.Spec) bool { return sp.Topic == events.TopicAudit }) {
			w.publish(ctx, audit, e)
		}
	}
	for _, e := range w.samples(east, func(sp events.Spec) bool { return sp.Topic == events.TopicPlacements }) {
		w.publish(ctx, audit, e)
	}

	// The pinned cluster's agent signs in the DSSE form, as a writer
	// upgraded before its readers does; the others in the compact form.
	agent := map[string]*events.Producer{east: w.producer(w.keys[east]), pinned: w.producer(w.keys[pinned], events.WithSigForm(events.SigDSSE))}
	observed := func(sp events.Spec) bool {
		return sp.Topic == events.TopicStatus || sp.Topic == events.TopicDeployments
	}
	var statusRecs []*kgo.Record
	for _, c := range []string{east, pinned} {
		for _, e := range w.samples(c, observed) {
			statusRecs = append(statusRecs, w.publish(ctx, agent[c], e))
		}
	}
	// A live question to each cluster, on its config partition (its pin
	// included), and the cluster's answer.
	questions, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(w.pins)...), w.hub, w.topics)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{east, pinned} {
		for _, e := range w.samples(c, func(sp events.Spec) bool { return sp.Family == events.FamilyQuery }) {
			if e.Type() == events.TypeQueryRequested {
				w.publish(ctx, questions, e)
			} else {
				w.publish(ctx, agent[c], e)
			}
		}
	}
	// A dead letter, while the key of the record it copies is valid.
	dlq, err := events.NewDeadLetter(kafkatest.Client(t, events.ProducerOpts(nil)...), w.topics[events.TopicDeadLetter])
	if err != nil {
		t.Fatal(err)
	}
	if err := dlq.Send(ctx, statusRecs[0], events.Poison(errRefused)); err != nil {
		t.Fatal(err)
	}
	w.count(events.TopicDeadLetter, headerValue(statusRecs[0], "ce_type"))
	w.mustRefuse(ctx, w.producer(planted), w.heartbeat(east))
	// A batch of east's deltas, signed by east's key, with a delta of
	// another cluster in it.
	foreign, err := events.New("//argosy.dev/spoke/"+east, events.TypeApplicationStatusBatch, events.Subject{Cluster: east}.String(), east,
		schemas.ApplicationStatusBatch{Cluster: east, Deltas: []schemas.ApplicationStatusChanged{
			{Resource: schemas.Resource{Cluster: east, Namespace: "argocd", Name: "guestbook"}, Seq: 9},
			{Resource: schemas.Resource{Cluster: pinned, Namespace: "argocd", Name: "guestbook"}, Seq: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	w.mustRefuse(ctx, agent[east], foreign)
	// Log times are milliseconds: keep the rotation clear of the events
	// the old key signed, and of those the new one signs.
	time.Sleep(20 * time.Millisecond)
	introduced := w.publish(ctx, trust, w.keyEvent(events.TypeKeyRotated, pinned, w.keys[pinned].KeyID(),
		schemas.KeyRotated{KeyID: w.keys[pinned].KeyID(), Next: keyRegistered(pinned, w.next.Public())}))
	time.Sleep(20 * time.Millisecond)
	rotated := w.producer(w.next)
	for _, e := range w.samples(pinned, observed) {
		w.publish(ctx, rotated, e)
	}
	w.mustRefuse(ctx, agent[pinned], w.heartbeat(pinned))
	// The new key names a trust offset before the rotation that
	// introduced it, within the clock margin: not in its cut, unknown.
	w.mustRefuse(ctx, w.producer(w.next.WithTrustOffset(func() (int64, bool) { return introduced.Offset, true })), w.heartbeat(pinned))

	// A rotation of east's key to a key of another cluster: no reader
	// applies it, and east's key signs on.
	stray := signer(t)
	recs, err := trust.Publish(ctx, w.keyEvent(events.TypeKeyRotated, east, w.keys[east].KeyID(),
		schemas.KeyRotated{KeyID: w.keys[east].KeyID(), Next: keyRegistered(pinned, stray.Public())}))
	if err != nil {
		t.Fatal(err)
	}
	w.unapplied = append(w.unapplied, fmt.Sprintf("%s/%d@%d", recs[0].Topic, recs[0].Partition, recs[0].Offset))
	time.Sleep(20 * time.Millisecond)

	// east's key is rotated with an hour's overlap: both keys sign. Then
	// east is deregistered, which revokes both, and neither signs again.
	eastNext := signer(t)
	w.publish(ctx, trust, w.keyEvent(events.TypeKeyRotated, east, w.keys[east].KeyID(),
		schemas.KeyRotated{KeyID: w.keys[east].KeyID(), Next: keyRegistered(east, eastNext.Public()), OverlapSeconds: 3600}))
	time.Sleep(20 * time.Millisecond)
	w.publish(ctx, agent[east], w.heartbeat(east))
	w.publish(ctx, w.producer(eastNext), w.heartbeat(east))
	var revoked *kgo.Record
	for _, k := range []*events.Signer{w.keys[east], eastNext} {
		r := w.publish(ctx, trust, w.keyEvent(events.TypeKeyRevoked, east, k.KeyID(), schemas.KeyRevoked{KeyID: k.KeyID(), Reason: "cluster east-1 deregistered"}))
		revoked = cmp.Or(revoked, r)
	}
	time.Sleep(20 * time.Millisecond)
	w.mustRefuse(ctx, agent[east], w.heartbeat(east))
	w.mustRefuse(ctx, w.producer(eastNext), w.heartbeat(east))
	// Within the clock margin after the revocations, a heartbeat that
	// names a trust offset before them was concurrent with them: every
	// reader, judging it by its cut, accepts it.
	w.publish(ctx, w.producer(w.keys[east].WithTrustOffset(func() (int64, bool) { return revoked.Offset, true })), w.heartbeat(east))

	// The hub's key is rotated, signed by both keys; the successor, an
	// anchor now, signs trust events and the hub's audit.
	time.Sleep(20 * time.Millisecond)
	nextHub := signer(t)
	both, err := w.hub.Cosigner(nextHub)
	if err != nil {
		t.Fatal(err)
	}
	hubNext := keyRegistered(hubName, nextHub.Public())
	hubNext.Role = schemas.RoleHub
	// The successor is on the trust topic already, as a hub key, not an
	// anchor (a hub that ran with it published it): the rotation makes
	// it one.
	w.publish(ctx, trust, w.keyEvent(events.TypeKeyRegistered, hubName, nextHub.KeyID(), hubNext))
	rot := w.publish(ctx, w.producer(both), w.keyEvent(events.TypeKeyRotated, hubName, w.hub.KeyID(), schemas.KeyRotated{KeyID: w.hub.KeyID(), Next: hubNext}))
	time.Sleep(20 * time.Millisecond)
	// A replica that did not cosign, its follower short of the rotation,
	// registers a key with the old key alone, naming a trust offset
	// before the rotation, well within the clock margin: a trust event is
	// judged by every trust record before it, whatever offset it names.
	stale := w.hub.WithTrustOffset(func() (int64, bool) { return rot.Offset, true })
	late := signer(t)
	w.mustRefuse(ctx, w.producer(stale), w.keyEvent(events.TypeKeyRegistered, pinned, late.KeyID(), keyRegistered(pinned, late.Public())))
	w.publish(ctx, w.producer(nextHub), w.keyEvent(events.TypeKeyRevoked, pinned, w.next.KeyID(), schemas.KeyRevoked{KeyID: w.next.KeyID(), Reason: "test"}))
	for _, e := range w.samples(east, func(sp events.Spec) bool { return sp.Topic == events.TopicAudit }) {
		w.publish(ctx, w.producer(nextHub), e)
	}

}

func (w *workload) producer(s *events.Signer, opts ...events.Option) *events.Producer {
	p, err := events.NewProducer(kafkatest.Client(w.t, events.ProducerOpts(nil)...), s, w.topics, opts...)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *workload) publish(ctx context.Context, p *events.Producer, e *event.Event) *kgo.Record {
	recs, err := p.Publish(ctx, e)
	if err != nil {
		w.t.Fatalf("publish %s: %v", e.Type(), err)
	}
	sp, _ := events.Lookup(e.Type())
	w.count(sp.Topic, e.Type())
	return recs[0]
}

// mustRefuse appends e, which every reader must refuse.
func (w *workload) mustRefuse(ctx context.Context, p *events.Producer, e *event.Event) {
	recs, err := p.Publish(ctx, e)
	if err != nil {
		w.t.Fatalf("publish %s: %v", e.Type(), err)
	}
	w.refused = append(w.refused, fmt.Sprintf("%s/%d@%d", recs[0].Topic, recs[0].Partition, recs[0].Offset))
}

// aborted appends trust event e, signed by the hub, in a transaction it
// then aborts: what a registration the hub refused leaves.
func (w *workload) aborted(ctx context.Context, e *event.Event) {
	t := w.t
	cl := kafkatest.Client(t, append(events.ProducerOpts(nil), kgo.TransactionalID("refused."+w.topics[events.TopicTrust]))...)
	if err := w.hub.Sign(ctx, e); err != nil {
		t.Fatal(err)
	}
	rec, err := events.EventRecord(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	rec.Topic = w.topics[events.TopicTrust]
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// heartbeat is a heartbeat of cluster.
func (w *workload) heartbeat(cluster string) *event.Event {
	return w.samples(cluster, func(sp events.Spec) bool { return sp.Type == events.TypeHeartbeat })[0]
}

func (w *workload) count(role events.Topic, typ string) {
	if w.written[string(role)] == nil {
		w.written[string(role)] = map[string]int{}
	}
	w.written[string(role)][typ]++
}

// keyEvent is a trust event about key id, keyed by the key's owner.
func (w *workload) keyEvent(typ, owner, id string, data any) *event.Event {
	e, err := events.New("//argosy.dev/hub/test", typ, "keys/"+id, owner, data)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func keyRegistered(owner string, pub ed25519.PublicKey) schemas.KeyRegistered {
	return schemas.KeyRegistered{KeyID: events.KeyID(pub), Owner: owner, Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub)}
}

// samples returns a fresh event of each catalogued type that keep
// accepts (key events aside), about cluster, with the golden samples' data.
func (w *workload) samples(cluster string, keep func(events.Spec) bool) []*event.Event {
	t := w.t
	var out []*event.Event
	for _, sp := range events.Catalogue() {
		if !keep(sp) || sp.Topic == events.TopicTrust && sp.Signer == schemas.RoleHub {
			continue
		}
		s, err := golden.Read("../../testdata/golden/" + sp.Type + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(s.Value), &data); err != nil {
			t.Fatal(err)
		}
		golden.Retarget(data, cluster)
		if sp.Type == events.TypeClusterRegistered {
			delete(data, "partition")
			if pin, ok := w.pins[cluster]; ok {
				data["partition"] = pin
			}
			data["signingKeyId"] = w.keys[cluster].KeyID()
		}
		if sp.Type == events.TypeClusterRegistered || sp.Type == events.TypeClusterDeregistered {
			data["name"] = cluster
		}
		subj := headerValue(s.Record(), "ce_subject")
		if p, err := events.ParseSubject(subj); err == nil {
			p.Cluster = cluster
			subj = p.String()
		}
		key := cluster
		if sp.Topic == events.TopicPlacements {
			key = strings.TrimPrefix(subj, "placements/")
		}
		e, err := events.New("//argosy.dev/test/"+cluster, sp.Type, subj, key, data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func headerValue(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}
