//go:build integration

package projector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/pgtest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// meters reads the test binary's metrics. The events package creates its
// instruments once, from the meter provider that is global then, so one
// provider serves the whole binary and tests compare counts before and after.
var meters = sdkmetric.NewManualReader()

// spans records the test binary's spans. OpenTelemetry's global provider
// cannot be set back once set, so one recorder serves the whole binary.
var spans = tracetest.NewSpanRecorder()

func TestMain(m *testing.M) {
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(meters)))
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	os.Exit(kafkatest.Main(kafkatest.RunFunc(func() int { return pgtest.Main(m) })))
}

// pins put each cluster on a partition of its own on the per-cluster topics.
var pins = map[string]int32{"c1": 0, "c2": 1}

// rig is one test's topics, signers and decoder on the real broker: a hub
// and clusters c1 and c2, whose keys a static registry trusts.
type rig struct {
	t       *testing.T
	topics  events.Topics
	raw     *kgo.Client
	hub     *events.Signer
	signers map[string]*events.Signer
	dec     *events.Decoder
	// lagsCaughtUp is the lag gauge, by "topic/partition", once fold's
	// runner had caught up and before it stopped.
	lagsCaughtUp map[string]int64
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, topics: events.DefaultTopics(kafkatest.Prefix(t)), signers: map[string]*events.Signer{}}
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), r.topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(r.topics))...)
	r.raw = kafkatest.Client(t, events.ProducerOpts(pins)...)
	r.hub = newSigner(t)
	keys := []events.Key{events.HubAnchor("hub", r.hub.Public())}
	for _, c := range []string{"c1", "c2"} {
		s := newSigner(t)
		r.signers[c] = s
		keys = append(keys, events.Key{ID: events.KeyID(s.Public()), Owner: c, Role: schemas.RoleCluster,
			Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: s.Public()})
	}
	var err error
	if r.dec, err = events.NewDecoder(events.NewVerifier(events.NewRegistry(keys...)), events.WithTopics(r.topics)); err != nil {
		t.Fatal(err)
	}
	return r
}

// intake reads through the rig's decoder and dead-letters to its topic.
func (r *rig) intake() *events.Intake {
	r.t.Helper()
	dlq, err := events.NewDeadLetter(kafkatest.Client(r.t, events.ProducerOpts(nil)...), r.topics[events.TopicDeadLetter])
	if err != nil {
		r.t.Fatal(err)
	}
	in, err := events.NewIntake(r.dec, dlq)
	if err != nil {
		r.t.Fatal(err)
	}
	return in
}

func newSigner(t *testing.T) *events.Signer {
	t.Helper()
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// publish signs es with s and appends them as the hub and the agents do.
func (r *rig) publish(ctx context.Context, s *events.Signer, es ...*event.Event) []*kgo.Record {
	r.t.Helper()
	p, err := events.NewProducer(r.raw, s, r.topics)
	if err != nil {
		r.t.Fatal(err)
	}
	recs, err := p.Publish(ctx, es...)
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

// produce appends rec to the topic of role as it is, and returns it with
// its partition and offset.
func (r *rig) produce(role events.Topic, rec *kgo.Record) *kgo.Record {
	r.t.Helper()
	rec.Topic = r.topics[role]
	if err := r.raw.ProduceSync(r.t.Context(), rec).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// produceCommitted appends rec in a committed transaction, as
// events.ConfigWriter writes: a commit marker follows it.
func (r *rig) produceCommitted(role events.Topic, rec *kgo.Record) *kgo.Record {
	r.t.Helper()
	ctx := r.t.Context()
	cl := kafkatest.Client(r.t, kgo.TransactionalID("runner-test."+r.topics[role]))
	if err := cl.BeginTransaction(); err != nil {
		r.t.Fatal(err)
	}
	rec.Topic = r.topics[role]
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// signed returns e signed by s as a record, not yet appended.
func (r *rig) signed(s *events.Signer, e *event.Event) *kgo.Record {
	r.t.Helper()
	if err := s.Sign(r.t.Context(), e); err != nil {
		r.t.Fatal(err)
	}
	return encode(r.t, e)
}

func encode(t *testing.T, e *event.Event) *kgo.Record {
	t.Helper()
	rec, err := events.EventRecord(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func newEvent(t *testing.T, source, typ string, subj events.Subject, data any) *event.Event {
	t.Helper()
	e, err := events.New(source, typ, subj.String(), subj.Cluster, data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func appUpsert(t *testing.T, cluster, name string, gen int64) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/hub/test", events.TypeApplicationUpserted,
		events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: name},
		schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: name, Generation: gen},
			Project: "default", Spec: []byte(fmt.Sprintf(`{"project":"default","source":{"targetRevision":"v%d"}}`, gen))})
}

func heartbeat(t *testing.T, cluster string, seq int64, agent string) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/spoke/"+cluster, events.TypeHeartbeat, events.Subject{Cluster: cluster},
		schemas.Heartbeat{Cluster: cluster, AgentVersion: agent, Mode: "managed", Seq: seq, Applications: 1})
}

func appStatus(t *testing.T, cluster string, seq int64, health string) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/spoke/"+cluster, events.TypeApplicationStatus,
		events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "guestbook"},
		schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "guestbook", Generation: 1},
			Seq: seq, Full: true, Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: health}})
}

func configApplied(t *testing.T, cluster string, gen int64, eventID string) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/spoke/"+cluster, events.TypeConfigApplied,
		events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "guestbook"},
		schemas.ConfigApplied{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "guestbook", Generation: gen}, EventID: eventID})
}

// endOffsets returns the end offset of every partition of topics that holds
// records.
func (r *rig) endOffsets(topics ...string) map[projector.Partition]int64 {
	r.t.Helper()
	listed, err := kadm.NewClient(kafkatest.Client(r.t)).ListEndOffsets(r.t.Context(), topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	ends := map[projector.Partition]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			ends[projector.Partition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	})
	return ends
}

// folded are the names of the topics the projector folds.
func (r *rig) folded() []string {
	return []string{r.topics[events.TopicConfig], r.topics[events.TopicStatus], r.topics[events.TopicDeployments], r.topics[events.TopicAudit]}
}

// workload publishes gens generations of the two clusters' Application,
// with c1's status and heartbeat and c2's status after each.
func (r *rig) workload(gens int64) {
	r.t.Helper()
	c1, c2 := r.signers["c1"], r.signers["c2"]
	for gen := int64(1); gen <= gens; gen++ {
		r.publish(r.t.Context(), r.hub, appUpsert(r.t, "c1", "guestbook", gen), appUpsert(r.t, "c2", "guestbook", gen))
		r.publish(r.t.Context(), c1, appStatus(r.t, "c1", gen, "Progressing"), heartbeat(r.t, "c1", gen, "v1"))
		r.publish(r.t.Context(), c2, appStatus(r.t, "c2", gen, "Healthy"))
	}
}

// fold runs a Runner over the rig's topics into a new SQLite store until the
// store's offsets reach the ends of the folded topics, then stops it. Run
// must return nil, and the client must close promptly.
func (r *rig) fold() *sqlstore.Store {
	t := r.t
	t.Helper()
	ends := r.endOffsets(r.folded()...)
	store := newStore(t)
	stopped, stop := startRunner(t, r, r.topics[events.TopicConfig]+".projector", store, 0)
	caughtUp := waitCaughtUp(t.Context(), store, ends, stopped)
	r.lagsCaughtUp = r.waitLagsSettle()
	if err := errors.Join(caughtUp, stop()); err != nil {
		t.Fatal(err)
	}
	return store
}

// waitCaughtUp polls the store until its offsets reach ends, for at most
// two minutes, or until the runner stops by itself.
func waitCaughtUp(ctx context.Context, store *sqlstore.Store, ends map[projector.Partition]int64, stopped <-chan struct{}) error {
	ps := slices.Collect(maps.Keys(ends))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := store.Offsets(ctx, ps)
		if err != nil {
			return fmt.Errorf("stored offsets: %w", err)
		}
		reached := true
		for p, end := range ends {
			reached = reached && got[p] >= end
		}
		if reached {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stored offsets %v never reached the ends %v", got, ends)
		}
		select {
		case <-stopped:
			return fmt.Errorf("Run returned with stored offsets %v short of the ends %v", got, ends)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deadLetters reads the dead-letter topic up to its end.
func (r *rig) deadLetters() []*kgo.Record {
	r.t.Helper()
	topic := r.topics[events.TopicDeadLetter]
	end := r.endOffsets(topic)[projector.Partition{Topic: topic, Partition: 0}]
	cl := kafkatest.Client(r.t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(r.t.Context(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("read %d of the %d dead letters: %v", len(out), end, ctx.Err())
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// deadLettered returns the argosy.events.dead_lettered counts by reason.
func deadLettered(t *testing.T) map[string]int64 {
	return sumsBy(t, "argosy.events.dead_lettered", "reason")
}

// sumsBy returns counter name's totals by the value of attribute key.
func sumsBy(t *testing.T, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range collect(t, name) {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value(attribute.Key(key))
				out[v.Emit()] += dp.Value
			}
		}
	}
	return out
}

// testPrefix is the prefix of this test's topic names.
func (r *rig) testPrefix() string {
	c := r.topics[events.TopicConfig]
	return c[:strings.LastIndex(c, ".argosy.")]
}

// waitLagsSettle returns the lag gauge for this test's topics once every
// partition shows 0 (the gauge follows the store's commit by a moment), or
// as it is after 10 s.
func (r *rig) waitLagsSettle() map[string]int64 {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := lags(r.t, r.testPrefix())
		settled := len(got) > 0
		for _, n := range got {
			settled = settled && n == 0
		}
		if settled || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lags returns the projector's lag gauge by "topic/partition", for the
// topics whose names start with prefix.
func lags(t *testing.T, prefix string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range collect(t, "argosy.projector.lag") {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			for _, dp := range g.DataPoints {
				topic, _ := dp.Attributes.Value("topic")
				part, _ := dp.Attributes.Value("partition")
				if strings.HasPrefix(topic.AsString(), prefix) {
					out[topic.AsString()+"/"+part.Emit()] = dp.Value
				}
			}
		}
	}
	return out
}

func collect(t *testing.T, name string) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := meters.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				out = append(out, m)
			}
		}
	}
	return out
}

// delta returns after less before, leaving out what did not change.
func delta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func setHeader(rec *kgo.Record, key, value string) {
	for i, h := range rec.Headers {
		if h.Key == key {
			rec.Headers[i].Value = []byte(value)
		}
	}
}

func headers(rec *kgo.Record) map[string]string {
	out := map[string]string{}
	for _, h := range rec.Headers {
		out[h.Key] = string(h.Value)
	}
	return out
}

// TestRunnerDeadLettersBadInput folds valid events with bad records of
// eight kinds between them. Each bad record is dead-lettered once, with its
// reason and origin, and counted; none changes a view; the valid events
// after them are folded, so the projector did not stop on them.
func TestRunnerDeadLettersBadInput(t *testing.T) {
	r := newRig(t)
	c1, c2 := r.signers["c1"], r.signers["c2"]
	up1 := appUpsert(t, "c1", "guestbook", 1)
	r.publish(t.Context(), r.hub, up1)
	r.publish(t.Context(), c1, appStatus(t, "c1", 1, "Healthy"), heartbeat(t, "c1", 1, "v1"))
	r.publish(t.Context(), c2, heartbeat(t, "c2", 1, "v1"))

	stale := appStatus(t, "c1", 3, "Degraded")
	stale.SetTime(time.Now().Add(-8 * 24 * time.Hour).UTC().Truncate(time.Second))
	unknownType := r.signed(c1, heartbeat(t, "c1", 90, "evil"))
	setHeader(unknownType, "ce_type", "io.argosy.status.unheard.of.v1")
	tampered := r.signed(c2, heartbeat(t, "c2", 93, "v1"))
	tampered.Value = bytes.Replace(tampered.Value, []byte(`"v1"`), []byte(`"evil"`), 1)
	bad := []struct {
		reason error
		topic  events.Topic
		rec    *kgo.Record
	}{
		{events.ErrMalformed, events.TopicConfig, &kgo.Record{Key: []byte("c1"), Value: []byte("not an event")}},
		{events.ErrUnsigned, events.TopicStatus, encode(t, appStatus(t, "c1", 2, "Degraded"))},
		{events.ErrUnknownType, events.TopicStatus, unknownType},
		{events.ErrNotAuthorized, events.TopicStatus, r.signed(c2, heartbeat(t, "c1", 91, "evil"))},
		{events.ErrStale, events.TopicStatus, r.signed(c1, stale)},
		{events.ErrUnknownKey, events.TopicStatus, r.signed(newSigner(t), heartbeat(t, "c2", 92, "evil"))},
		{events.ErrBadSignature, events.TopicStatus, tampered},
		{events.ErrWrongTopic, events.TopicStatus, r.signed(r.hub, appUpsert(t, "c2", "evil", 1))},
	}
	type origin struct {
		Topic     string
		Partition int32
		Offset    int64
	}
	type letter struct{ Reason, Key, Value string }
	want := map[origin][]letter{}
	wantCounts := map[string]int64{}
	produceBadWith := func(produce func(events.Topic, *kgo.Record) *kgo.Record, reason error, topic events.Topic, rec *kgo.Record) {
		rec = produce(topic, rec)
		o := origin{rec.Topic, rec.Partition, rec.Offset}
		want[o] = append(want[o], letter{reason.Error(), string(rec.Key), string(rec.Value)})
		wantCounts[reason.Error()]++
	}
	produceBad := func(reason error, topic events.Topic, rec *kgo.Record) { produceBadWith(r.produce, reason, topic, rec) }
	for _, b := range bad {
		produceBad(b.reason, b.topic, b.rec)
	}

	// Valid events after the bad ones, on each partition that has them;
	// none of them hides what a bad heartbeat or status would have changed.
	up2 := appUpsert(t, "c1", "guestbook", 2)
	r.publish(t.Context(), r.hub, up2)
	r.publish(t.Context(), c1, configApplied(t, "c1", 2, up2.ID()))
	r.publish(t.Context(), c2, appStatus(t, "c2", 1, "Healthy"))
	// A partition may end on a bad record: folding the good ones of the
	// same step must not take the stored offset back before it.
	produceBad(events.ErrMalformed, events.TopicStatus, &kgo.Record{Key: []byte("c2"), Value: []byte("not an event either")})
	// The config topic is written in transactions (events.ConfigWriter), so
	// its partitions end on a commit marker, which the stored offset and
	// the lag must count as read.
	produceBadWith(r.produceCommitted, events.ErrMalformed, events.TopicConfig,
		&kgo.Record{Key: []byte("c1"), Value: []byte("not an event, committed")})

	before, foldedBefore := deadLettered(t), sumsBy(t, "argosy.projector.folded", "type")
	store := r.fold()
	after, foldedAfter := deadLettered(t), sumsBy(t, "argosy.projector.folded", "type")

	got := map[origin][]letter{}
	for _, dl := range r.deadLetters() {
		h := headers(dl)
		part, perr := strconv.ParseInt(h[events.HeaderDLQPartition], 10, 32)
		off, oerr := strconv.ParseInt(h[events.HeaderDLQOffset], 10, 64)
		if err := errors.Join(perr, oerr); err != nil {
			t.Errorf("dead letter %d: origin headers: %v", dl.Offset, err)
		}
		if h[events.HeaderDLQError] == "" {
			t.Errorf("dead letter %d has no error text: %v", dl.Offset, h)
		}
		o := origin{h[events.HeaderDLQTopic], int32(part), off}
		got[o] = append(got[o], letter{h[events.HeaderDLQReason], string(dl.Key), string(dl.Value)})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dead letters by origin (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCounts, delta(before, after)); diff != "" {
		t.Errorf("argosy.events.dead_lettered by reason (-want +got):\n%s", diff)
	}
	wantFolded := map[string]int64{events.TypeApplicationUpserted: 2, events.TypeApplicationStatus: 2,
		events.TypeHeartbeat: 2, events.TypeConfigApplied: 1}
	if diff := cmp.Diff(wantFolded, delta(foldedBefore, foldedAfter)); diff != "" {
		t.Errorf("argosy.projector.folded by type (-want +got):\n%s", diff)
	}
	if len(r.lagsCaughtUp) == 0 {
		t.Error("no argosy.projector.lag for this test's topics")
	}
	for p, n := range r.lagsCaughtUp {
		if n != 0 {
			t.Errorf("argosy.projector.lag of %s is %d after catching up, want 0", p, n)
		}
	}
	if left := lags(t, r.testPrefix()); len(left) != 0 {
		t.Errorf("argosy.projector.lag still reports %v after the runner stopped", left)
	}

	checkViews(t, store, views{
		Apps: []appView{
			{Key: projector.AppKey{Cluster: "c1", Namespace: "argocd", Name: "guestbook"}, Generation: 2, EventID: up2.ID(), Health: "Healthy", Seq: 1, Applied: 2},
			// c2's status names generation 1 as applied, which is all
			// the view knows of it.
			{Key: projector.AppKey{Cluster: "c2", Namespace: "argocd", Name: "guestbook"}, Health: "Healthy", Seq: 1, Applied: 1},
		},
		Beats:  []beatView{{Cluster: "c1", Seq: 1, Agent: "v1", Apps: 1}, {Cluster: "c2", Seq: 1, Agent: "v1"}},
		Audits: []string{up2.ID(), up1.ID()},
	})
}

// views is what the test reads back of a store.
type views struct {
	Apps   []appView
	Beats  []beatView
	Audits []string // event ids, newest first
}

type appView struct {
	Key        projector.AppKey
	Generation int64
	EventID    string
	Health     string
	Seq        int64
	Applied    int64 // the generation the cluster acknowledged
}

type beatView struct {
	Cluster, Agent string
	Seq            int64
	Apps           int // desired Applications
}

// checkViews reads the store through its query side and compares it with
// want.
func checkViews(t *testing.T, store *sqlstore.Store, want views) {
	t.Helper()
	if diff := cmp.Diff(want, readViews(t, store)); diff != "" {
		t.Errorf("views (-want +store):\n%s", diff)
	}
}

// readViews reads the store through its query side.
func readViews(t *testing.T, store *sqlstore.Store) views {
	t.Helper()
	ctx := t.Context()
	var got views
	apps, err := store.Apps(ctx, projector.AppFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		v := appView{Key: a.AppKey}
		if a.Desired != nil {
			v.Generation, v.EventID = a.Desired.Generation, a.Desired.EventID
		}
		if a.Observed != nil {
			v.Seq, v.Applied = a.Observed.Seq, a.Observed.AppliedGeneration
			if a.Observed.Health != nil {
				v.Health = a.Observed.Health.Status
			}
		}
		got.Apps = append(got.Apps, v)
	}
	clusters, err := store.Clusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		v := beatView{Cluster: c.Name, Apps: c.Applications}
		if c.Beat != nil {
			v.Seq, v.Agent = c.Beat.Seq, c.Beat.AgentVersion
		}
		got.Beats = append(got.Beats, v)
	}
	audit, err := store.Audit(ctx, projector.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range audit {
		got.Audits = append(got.Audits, a.EventID)
	}
	return got
}

// TestRunnerContinuesEachEventsTrace publishes events from within spans of
// their own and checks that each one's fold span continues the trace the
// event carries, as a child of the span that published it, with the
// record's origin; and that the steps' commits are traced.
func TestRunnerContinuesEachEventsTrace(t *testing.T) {
	spans.Reset() // this package's tests do not run in parallel

	r := newRig(t)
	type published struct {
		rec    *kgo.Record
		e      *event.Event
		caller trace.SpanContext
	}
	var sent []published
	for _, p := range []struct {
		signer *events.Signer
		e      *event.Event
	}{
		{r.hub, appUpsert(t, "c2", "guestbook", 1)},
		{r.signers["c1"], heartbeat(t, "c1", 1, "v1")},
		{r.signers["c2"], appStatus(t, "c2", 1, "Healthy")},
	} {
		ctx, span := otel.Tracer("test").Start(t.Context(), "argosy app apply")
		recs := r.publish(ctx, p.signer, p.e)
		span.End()
		sent = append(sent, published{rec: recs[0], e: p.e, caller: span.SpanContext()})
	}
	r.fold()

	ended := spans.Ended()
	for _, p := range sent {
		t.Run(p.e.Type(), func(t *testing.T) {
			pub := findSpans(ended, func(s sdktrace.ReadOnlySpan) bool {
				return s.Name() == "events.publish" && s.Parent().SpanID() == p.caller.SpanID()
			})
			folds := findSpans(ended, func(s sdktrace.ReadOnlySpan) bool {
				return s.Name() == "projector.fold "+p.e.Type() && attrs(s)["cloudevents.event_id"] == p.e.ID()
			})
			if len(pub) != 1 || len(folds) != 1 {
				t.Fatalf("%d publish spans and %d fold spans of event %s, want one each", len(pub), len(folds), p.e.ID())
			}
			fold := folds[0]
			if fold.SpanContext().TraceID() != p.caller.TraceID() || fold.Parent().SpanID() != pub[0].SpanContext().SpanID() ||
				!fold.Parent().IsRemote() {
				t.Errorf("fold span in trace %s with parent %s (remote %t), want trace %s with the publish span %s as remote parent",
					fold.SpanContext().TraceID(), fold.Parent().SpanID(), fold.Parent().IsRemote(), p.caller.TraceID(), pub[0].SpanContext().SpanID())
			}
			if fold.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("fold span kind %v, want consumer", fold.SpanKind())
			}
			want := map[string]string{
				"messaging.destination.name":         p.rec.Topic,
				"messaging.destination.partition.id": strconv.Itoa(int(p.rec.Partition)),
				"messaging.kafka.offset":             strconv.FormatInt(p.rec.Offset, 10),
				"cloudevents.event_id":               p.e.ID(),
			}
			if diff := cmp.Diff(want, attrs(fold)); diff != "" {
				t.Errorf("fold span attributes (-want +got):\n%s", diff)
			}
			linked := findSpans(ended, func(s sdktrace.ReadOnlySpan) bool {
				return s.Name() == "projector.commit" && slices.ContainsFunc(s.Links(), func(l sdktrace.Link) bool {
					return l.SpanContext.SpanID() == fold.SpanContext().SpanID()
				})
			})
			if len(linked) != 1 {
				t.Errorf("%d commit spans link to the fold span, want 1", len(linked))
			}
		})
	}

	commits := findSpans(ended, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "projector.commit" })
	folded := 0
	for _, c := range commits {
		n, err := strconv.Atoi(attrs(c)["argosy.records"])
		if err != nil || n <= 0 {
			t.Errorf("commit span with argosy.records %q", attrs(c)["argosy.records"])
		}
		folded += n
	}
	if len(commits) == 0 || folded != len(sent) {
		t.Errorf("%d commit spans counting %d records, want at least one counting %d", len(commits), folded, len(sent))
	}
}

func findSpans(spans []sdktrace.ReadOnlySpan, match func(sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.Emit()
	}
	return out
}
