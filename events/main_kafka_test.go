//go:build integration

package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/internal/golden"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// rig is one test's topics, keys and clients on the real broker.
type rig struct {
	t      testing.TB
	topics events.Topics
	f      *fixture
	prod   *events.Producer
	client *kgo.Client
	// dial makes a client of the brokers the topics are on, closed when
	// the test ends.
	dial dialer
	// popts are the options of the producers publish makes.
	popts []events.Option
}

// dialer makes a client of some brokers, closed when the test ends, as
// kafkatest.Client does of the package's broker.
type dialer func(t testing.TB, opts ...kgo.Opt) *kgo.Client

// newRig creates a test's topics on the package's broker, deleted when
// the test ends.
func newRig(t testing.TB, configPartitions int32, pins map[string]int32) *rig {
	t.Helper()
	r := newRigOn(t, kafkatest.Client, 1, configPartitions, pins)
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(r.topics))...)
	return r
}

// newRigOn creates a test's topics, each replicated rf times, on the
// brokers dial reaches.
func newRigOn(t testing.TB, dial dialer, rf int16, configPartitions int32, pins map[string]int32) *rig {
	t.Helper()
	topics := events.DefaultTopics(kafkatest.Prefix(t))
	adm := kadm.NewClient(dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := events.EnsureTopics(ctx, adm, topics, events.TopicPlan(configPartitions, 2), rf, 1); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	client := dial(t, events.ProducerOpts(pins)...)
	prod, err := events.NewProducer(client, f.hub, topics)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, topics: topics, f: f, client: client, dial: dial, prod: prod}
}

func (r *rig) decoder(opts ...events.Option) *events.Decoder {
	d, err := events.NewDecoder(events.NewVerifier(r.f.reg), append([]events.Option{events.WithTopics(r.topics)}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// read runs a Reader until it has handled n events or a minute passed, and
// returns what it handled.
func (r *rig) read(topic, group string, dec *events.Decoder, n int, opts ...events.Option) []*events.Decoded {
	r.t.Helper()
	rd := newReader(r.t, r, dec, topic, group, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu  sync.Mutex
		got []*events.Decoded
	)
	err := rd.Run(ctx, func(_ context.Context, d *events.Decoded) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d)
		if len(got) == n {
			cancel()
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("reader: %v", err)
	}
	if len(got) < n {
		r.t.Fatalf("read %d events, want %d", len(got), n)
	}
	return got
}

// sampleEvents returns one fresh event per catalogue type, built from the
// golden samples' data, with signers that may sign each.
func (r *rig) sampleEvents(cluster string) []*event.Event {
	r.t.Helper()
	var out []*event.Event
	for _, sp := range events.Catalogue() {
		s, err := golden.Read("testdata/golden/" + sp.Type + ".json")
		if err != nil {
			r.t.Fatal(err)
		}
		orig, err := events.ParseRecord(context.Background(), s.Record())
		if err != nil {
			r.t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(orig.Data(), &data); err != nil {
			r.t.Fatal(err)
		}
		golden.Retarget(data, cluster)
		subj := orig.Subject()
		if p, err := events.ParseSubject(subj); err == nil {
			p.Cluster = cluster
			subj = p.String()
		}
		e, err := events.New("//argosy.dev/test", sp.Type, subj, cluster, data)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (r *rig) signerFor(sp events.Spec, cluster string) *events.Signer {
	if sp.Signer == "hub" {
		return r.f.hub
	}
	if cluster == "cluster-b" {
		return r.f.clusterB
	}
	return r.f.clusterA
}

// publish signs each event with the key that may sign it and appends it.
func (r *rig) publish(cluster string, es ...*event.Event) []*kgo.Record {
	r.t.Helper()
	return r.publishCtx(context.Background(), cluster, es...)
}

func (r *rig) publishCtx(ctx context.Context, cluster string, es ...*event.Event) []*kgo.Record {
	r.t.Helper()
	var recs []*kgo.Record
	for _, e := range es {
		sp, _ := events.Lookup(e.Type())
		p, err := events.NewProducer(r.client, r.signerFor(sp, cluster), r.topics, r.popts...)
		if err != nil {
			r.t.Fatal(err)
		}
		got, err := p.Publish(ctx, e)
		if err != nil {
			r.t.Fatalf("publish %s: %v", e.Type(), err)
		}
		recs = append(recs, got...)
	}
	return recs
}

// TestRoundTripEveryType appends one event of every type and reads each back
// from its topic with key, headers and data intact, in each signature form.
func TestRoundTripEveryType(t *testing.T) {
	for _, form := range []events.SigForm{events.SigCompact, events.SigDSSE} {
		t.Run(form.String(), func(t *testing.T) { roundTripEveryType(t, form) })
	}
}

func roundTripEveryType(t *testing.T, form events.SigForm) {
	r := newRig(t, 4, nil)
	r.popts = []events.Option{events.WithSigForm(form)}
	sent := r.publish("cluster-a", r.sampleEvents("cluster-a")...)
	byTopic := map[string][]*kgo.Record{}
	for _, rec := range sent {
		if rec.Offset < 0 || rec.Timestamp.IsZero() {
			t.Fatalf("record not durable: offset %d time %v", rec.Offset, rec.Timestamp)
		}
		byTopic[rec.Topic] = append(byTopic[rec.Topic], rec)
	}
	for topic, want := range byTopic {
		got := r.read(topic, topic+".test", r.decoder(events.WithTarget("cluster-a")), len(want))
		gotByID := map[string]*events.Decoded{}
		for _, d := range got {
			gotByID[d.Event.ID()] = d
		}
		for _, w := range want {
			e, err := events.ParseRecord(context.Background(), w)
			if err != nil {
				t.Fatal(err)
			}
			d, ok := gotByID[e.ID()]
			if !ok {
				t.Errorf("%s: event %s (%s) not read back", topic, e.ID(), e.Type())
				continue
			}
			if d.Partition != w.Partition || d.Offset != w.Offset {
				t.Errorf("%s: at %d@%d, produced at %d@%d", e.Type(), d.Partition, d.Offset, w.Partition, w.Offset)
			}
			if got := d.Event.Extensions()[events.ExtPartitionKey]; got != "cluster-a" {
				t.Errorf("%s: partitionkey %v", e.Type(), got)
			}
			if diff := cmp.Diff(normJSON(t, e.Data()), normJSON(t, d.Event.Data())); diff != "" {
				t.Errorf("%s: data (-sent +read):\n%s", e.Type(), diff)
			}
			if d.LogTime.Before(w.Timestamp.Truncate(time.Millisecond)) {
				t.Errorf("%s: log time %v is before the producer's %v", e.Type(), d.LogTime, w.Timestamp)
			}
		}
	}
	checkStoredHeaders(t, r, sent, form)
}

// checkStoredHeaders checks the keys and headers of the config and status
// records as the broker stored them: the compact form's ce_sig, or the
// DSSE form's ce_dssematerial, and a ce_dataschema on a status-family
// event in the DSSE form only (the status topic holds some trust events
// too, which keep theirs).
func checkStoredHeaders(t *testing.T, r *rig, sent []*kgo.Record, form events.SigForm) {
	sig, other := "ce_sig", "ce_dssematerial"
	if form == events.SigDSSE {
		sig, other = other, sig
	}
	for _, rec := range consumeRaw(t, r.topics[events.TopicStatus], countTopic(sent, r.topics[events.TopicStatus])) {
		hs := map[string]string{}
		for _, h := range rec.Headers {
			hs[h.Key] = string(h.Value)
		}
		sp, _ := events.Lookup(hs["ce_type"])
		if _, ok := hs["ce_dataschema"]; ok != (form == events.SigDSSE || !sp.TypeNamesSchema()) {
			t.Errorf("status record %d (%s): ce_dataschema present %v in the %s form", rec.Offset, hs["ce_type"], ok, form)
		}
		if hs[sig] == "" || hs[other] != "" {
			t.Errorf("status record %d: %s %q, %s %q", rec.Offset, sig, hs[sig], other, hs[other])
		}
	}
	raw := consumeRaw(t, r.topics[events.TopicConfig], countTopic(sent, r.topics[events.TopicConfig]))
	for _, rec := range raw {
		if rec.Attrs.TimestampType() != 1 {
			t.Errorf("record %d: timestamp type %d, want 1 (LogAppendTime)", rec.Offset, rec.Attrs.TimestampType())
		}
		if string(rec.Key) != "cluster-a" {
			t.Errorf("config record key %q", rec.Key)
		}
		hs := map[string]string{}
		for _, h := range rec.Headers {
			hs[h.Key] = string(h.Value)
		}
		for _, h := range []string{"ce_specversion", "ce_id", "ce_source", "ce_type", "ce_subject", "ce_time",
			"ce_dataschema", "ce_partitionkey", sig, "ce_signedextattrs", "content-type"} {
			if hs[h] == "" {
				t.Errorf("record %d lacks header %s", rec.Offset, h)
			}
		}
		if hs[other] != "" {
			t.Errorf("record %d carries %s beside %s", rec.Offset, other, sig)
		}
	}
}

func countTopic(recs []*kgo.Record, topic string) int {
	n := 0
	for _, r := range recs {
		if r.Topic == topic {
			n++
		}
	}
	return n
}

// consumeRaw reads n records of topic from the start with a plain client.
func consumeRaw(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	return consumeFrom(t, kafkatest.Client, topic, n)
}

// consumeFrom reads n records of topic from the start with a plain client
// that dial makes.
func consumeFrom(t *testing.T, dial dialer, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := dial(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s: %v", len(out), n, topic, ctx.Err())
		}
		out = append(out, f.Records()...)
	}
	return out
}

// TestDirectAssignmentReadsOnePartition checks that a reader assigned one
// config partition sees exactly the events of the clusters on it, and that
// the partition a pin or murmur2 names is where the producer put them.
func TestDirectAssignmentReadsOnePartition(t *testing.T) {
	const parts = 4
	pins := map[string]int32{"cluster-pinned": 3}
	r := newRig(t, parts, pins)
	pt := events.NewPartitioner(pins)
	clusters := []string{"cluster-a", "cluster-b", "cluster-c", "cluster-d", "cluster-e", "cluster-pinned"}
	want := map[int32]int{}
	for _, c := range clusters {
		for _, e := range generations(t, c, 1, 3) {
			recs := r.publish(c, e)
			if p := pt.PartitionOf(c, parts); recs[0].Partition != p {
				t.Fatalf("%s landed on %d, PartitionOf says %d", c, recs[0].Partition, p)
			}
			want[recs[0].Partition]++
		}
	}
	if pt.PartitionOf("cluster-pinned", parts) != 3 {
		t.Fatal("pin ignored")
	}
	for p := range int32(parts) {
		if want[p] == 0 {
			continue
		}
		got := r.read(r.topics[events.TopicConfig], fmt.Sprintf("%s.p%d", r.topics[events.TopicConfig], p), r.decoder(), want[p],
			events.WithPartitions(p))
		for _, d := range got {
			if d.Partition != p {
				t.Errorf("reader of partition %d got a record of partition %d", p, d.Partition)
			}
			if pt.PartitionOf(d.Subject.Cluster, parts) != p {
				t.Errorf("partition %d holds cluster %s", p, d.Subject.Cluster)
			}
		}
		// Nothing more arrives on that partition.
		if len(got) != want[p] {
			t.Errorf("partition %d: read %d, want %d", p, len(got), want[p])
		}
	}
}

// generations returns n upserts of one application with generations from,
// from+1, …
func generations(t *testing.T, cluster string, from int64, n int) []*event.Event {
	t.Helper()
	out := make([]*event.Event, n)
	for i := range out {
		out[i] = appUpsert(t, cluster)
		setGeneration(t, out[i], from+int64(i))
	}
	return out
}

func setGeneration(t *testing.T, e *event.Event, g int64) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data(), &m); err != nil {
		t.Fatal(err)
	}
	m["generation"] = g
	if err := e.SetData(event.ApplicationJSON, m); err != nil {
		t.Fatal(err)
	}
}

// TestCommittedOffsetsResume checks that a second reader of the same group
// starts after what the first one handled.
func TestCommittedOffsetsResume(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	group := topic + ".resume"
	first := generations(t, "cluster-a", 1, 5)
	r.publish("cluster-a", first...)
	got := r.read(topic, group, r.decoder(), 5)
	if got[4].Offset != 4 {
		t.Fatalf("first pass ended at offset %d", got[4].Offset)
	}
	second := generations(t, "cluster-a", 6, 3)
	r.publish("cluster-a", second...)
	got = r.read(topic, group, r.decoder(), 3)
	for i, d := range got {
		if d.Offset != int64(5+i) {
			t.Errorf("second pass read offset %d, want %d", d.Offset, 5+i)
		}
		if d.Event.ID() != second[i].ID() {
			t.Errorf("second pass read %s, want %s", d.Event.ID(), second[i].ID())
		}
	}
}

// TestDeadLettering feeds poison records between good ones and checks that
// the reader handles the good ones, dead-letters each bad one with its reason
// and origin, and does not stall.
func TestDeadLettering(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	raw := func(rec *kgo.Record) {
		rec.Topic, rec.Partition = topic, 0
		if err := r.client.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r.publish("cluster-a", appUpsert(t, "cluster-a"))
	raw(&kgo.Record{Key: []byte("cluster-a"), Value: []byte("not an event")})
	unsigned, err := events.EventRecord(context.Background(), appUpsert(t, "cluster-a"))
	if err != nil {
		t.Fatal(err)
	}
	raw(unsigned)
	forB := record(t, sign(t, r.f.hub, appUpsert(t, "cluster-b")))
	forB.Key = []byte("cluster-a")
	raw(forB)
	r.publish("cluster-a", appUpsert(t, "cluster-a"))

	got := r.read(topic, topic+".dlq", r.decoder(events.WithTarget("cluster-a")), 2)
	if got[0].Offset != 0 || got[1].Offset != 4 {
		t.Errorf("handled offsets %d and %d, want 0 and 4", got[0].Offset, got[1].Offset)
	}
	dl := consumeRaw(t, r.topics[events.TopicDeadLetter], 3)
	want := map[int64]string{1: "malformed", 2: "unsigned", 3: "wrong_target"}
	for _, rec := range dl {
		hs := map[string]string{}
		for _, h := range rec.Headers {
			hs[h.Key] = string(h.Value)
		}
		off, err := strconv.ParseInt(hs[events.HeaderDLQOffset], 10, 64)
		if err != nil {
			t.Fatalf("offset header: %v", err)
		}
		if hs[events.HeaderDLQReason] != want[off] || hs[events.HeaderDLQTopic] != topic || hs[events.HeaderDLQPartition] != "0" {
			t.Errorf("dead letter of offset %d: reason %q topic %q partition %q, want %q from %s/0",
				off, hs[events.HeaderDLQReason], hs[events.HeaderDLQTopic], hs[events.HeaderDLQPartition], want[off], topic)
		}
		if hs[events.HeaderDLQError] == "" || hs[events.HeaderDLQTime] == "" {
			t.Errorf("dead letter of offset %d lacks error or time: %v", off, hs)
		}
		delete(want, off)
	}
	if len(want) != 0 {
		t.Errorf("not dead-lettered: %v", want)
	}
}

// TestHandlerErrors checks the handler contract: a poison error dead-letters
// and moves on, a plain error is retried, a fatal error stops without commit.
func TestHandlerErrors(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	r.publish("cluster-a", appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a"))
	rd := newReader(t, r, r.decoder(), topic, topic+".h", events.WithMaxBackoff(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attempts := map[int64]int{}
	boom := errors.New("boom")
	err := rd.Run(ctx, func(_ context.Context, d *events.Decoded) error {
		attempts[d.Offset]++
		switch {
		case d.Offset == 0:
			return events.Poison(errors.New("refused"))
		case d.Offset == 1 && attempts[1] < 3:
			return errors.New("transient")
		case d.Offset == 2:
			return events.Fatal(boom)
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the fatal error", err)
	}
	if attempts[0] != 1 || attempts[1] != 3 || attempts[2] != 1 {
		t.Errorf("attempts %v, want 0:1 1:3 2:1", attempts)
	}
	dl := consumeRaw(t, r.topics[events.TopicDeadLetter], 1)
	for _, h := range dl[0].Headers {
		if h.Key == events.HeaderDLQReason && string(h.Value) != "handler" {
			t.Errorf("reason %q, want handler", h.Value)
		}
	}
	// What finished before the fatal error was committed; the failed
	// record was not, so a new reader starts with it.
	got := r.read(topic, topic+".h", r.decoder(), 1)
	if got[0].Offset != 2 {
		t.Errorf("after a fatal error the group resumed at %d, want 2", got[0].Offset)
	}
}

// TestEveryCodecStaysReadable appends signed events in batches of every
// codec Kafka knows, as producers of any version may have, and reads each
// back through a Reader and a Decoder: changing the codec Argosy writes
// with never makes the log's history unreadable. ProducerOpts alone
// writes zstd.
func TestEveryCodecStaysReadable(t *testing.T) {
	r := newRig(t, 1, nil)
	// Kafka's codec numbers, as a batch's attributes carry them.
	codecs := map[string]struct {
		opt  []kgo.Opt
		attr uint8
	}{"none": {codec(t, kgo.NoCompression()), 0}, "gzip": {codec(t, kgo.GzipCompression()), 1}, "snappy": {codec(t, kgo.SnappyCompression()), 2},
		"lz4": {codec(t, kgo.Lz4Compression()), 3}, "zstd": {codec(t, kgo.ZstdCompression()), 4}, "ProducerOpts": {nil, 4}}
	want := map[string]string{} // event id: codec
	for _, name := range slices.Sorted(maps.Keys(codecs)) {
		cl := kafkatest.Client(t, append(events.ProducerOpts(nil), codecs[name].opt...)...)
		p, err := events.NewProducer(cl, r.f.hub, r.topics)
		if err != nil {
			t.Fatal(err)
		}
		es := generations(t, "cluster-a", 1, 3)
		if _, err := p.Publish(t.Context(), es...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, e := range es {
			want[e.ID()] = name
		}
	}
	for _, rec := range consumeRaw(t, r.topics[events.TopicConfig], len(want)) {
		id := ""
		for _, h := range rec.Headers {
			if h.Key == "ce_id" {
				id = string(h.Value)
			}
		}
		if c := codecs[want[id]]; rec.Attrs.CompressionType() != c.attr {
			t.Errorf("event %s (%s) was written with codec %d, want %d", id, want[id], rec.Attrs.CompressionType(), c.attr)
		}
	}
	got := r.read(r.topics[events.TopicConfig], r.topics[events.TopicConfig]+".codecs",
		r.decoder(events.WithTarget("cluster-a")), len(want))
	for _, d := range got {
		delete(want, d.Event.ID())
	}
	if len(want) > 0 {
		t.Errorf("events not read back, by codec: %v", want)
	}
}

// codec returns the options that compress a client's batches with c,
// overriding ProducerOpts' compressor (none is a nil compressor).
func codec(t *testing.T, c kgo.CompressionCodec) []kgo.Opt {
	t.Helper()
	comp, err := kgo.DefaultCompressor(c)
	if err != nil {
		t.Fatal(err)
	}
	return []kgo.Opt{kgo.WithCompressor(comp), kgo.ProducerBatchCompression(c)}
}
