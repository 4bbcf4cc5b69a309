//go:build integration

package spoke_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// fakeArgo is an Argo CD in memory: it records what was applied to it.
type fakeArgo struct {
	mu      sync.Mutex
	applied map[string]int64 // "namespace/name" -> generation
}

func (f *fakeArgo) Apply(_ context.Context, obj *spoke.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied[obj.Namespace+"/"+obj.Name] = obj.Generation
	return nil
}

func (f *fakeArgo) Delete(_ context.Context, ref spoke.Ref, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.applied, ref.Namespace+"/"+ref.Name)
	return nil
}

func (f *fakeArgo) Operate(context.Context, spoke.Ref, spoke.Operation) error { return nil }

func (f *fakeArgo) Revert(context.Context, spoke.Ref, json.RawMessage) ([]string, json.RawMessage, error) {
	return nil, nil, nil
}

func (f *fakeArgo) snapshot() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.applied)
}

// noApps is a StatusSource of a cluster without Applications.
type noApps struct{}

func (noApps) Run(ctx context.Context, changed func(spoke.AppStatus)) error {
	changed(spoke.AppStatus{ListDone: true})
	<-ctx.Done()
	return nil
}

// memStore is an agent's Store in memory.
type memStore struct {
	memMarks
	applied sync.Map // key -> spoke.Applied
}

func newMemStore() *memStore { return &memStore{memMarks: memMarks{m: map[string]spoke.DeployMark{}}} }

func (s *memStore) Get(_ context.Context, key string) (spoke.Applied, bool, error) {
	a, ok := s.applied.Load(key)
	if !ok {
		return spoke.Applied{}, false, nil
	}
	return a.(spoke.Applied), true, nil
}

func (s *memStore) Put(_ context.Context, key string, a spoke.Applied) error {
	s.applied.Store(key, a)
	return nil
}

// fleet is a hub's producer and topics on the real broker, for agents.
type fleet struct {
	t      testing.TB
	topics events.Topics
	hub    *events.Signer
	client *kgo.Client
	prod   *events.Producer
}

func newFleet(t testing.TB, configPartitions int32) *fleet {
	t.Helper()
	f := &fleet{t: t, topics: events.DefaultTopics(kafkatest.Prefix(t)), hub: signer(t)}
	var err error
	if f.client, err = kgo.NewClient(append(events.ProducerOpts(nil), kgo.SeedBrokers(kafkatest.Bootstrap(t)))...); err != nil {
		t.Fatal(err)
	}
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(f.client), f.topics, events.TopicPlan(configPartitions, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	if f.prod, err = events.NewProducer(f.client, f.hub, f.topics); err != nil {
		t.Fatal(err)
	}
	return f
}

// upsert is generation gen of Application name on cluster.
func (f *fleet) upsert(cluster, name string, gen int64) *event.Event {
	f.t.Helper()
	res := schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: name, Generation: gen}
	e, err := events.New("//argosy.dev/hub/test", events.TypeApplicationUpserted,
		events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: "argocd", Name: name}.String(), cluster,
		schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: json.RawMessage(`{"project":"default"}`)})
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

// configWriter appends config events as the hub does, in transactions
// under the transactional id name (and the fleet's topics), until the test
// ends.
func (f *fleet) configWriter(name string) *events.ConfigWriter {
	f.t.Helper()
	txn := kafkatest.Client(f.t, append(events.ProducerOpts(nil), kgo.TransactionalID(name+"."+f.topics[events.TopicConfig]))...)
	w, err := events.NewConfigWriter(txn, f.hub, f.topics)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fleet) publish(p *events.Producer, es ...*event.Event) {
	f.t.Helper()
	if _, err := p.Publish(f.t.Context(), es...); err != nil {
		f.t.Fatal(err)
	}
}

// agent is one Agent with its fake Argo CD and its own meter provider.
type agent struct {
	cluster string
	argo    *fakeArgo
	metrics *sdkmetric.ManualReader
	run     *spoke.Agent
}

// agent is an Agent of cluster with an Argo CD in memory, a meter
// provider of its own, and opts.
func (f *fleet) agent(cluster string, opts ...spoke.Option) *agent {
	f.t.Helper()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		f.t.Fatal(err)
	}
	a := &agent{cluster: cluster, argo: &fakeArgo{applied: map[string]int64{}}, metrics: sdkmetric.NewManualReader()}
	a.run, err = spoke.New(cluster, keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(f.t))},
		a.argo, noApps{}, newMemStore(), append([]spoke.Option{spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(time.Second),
			spoke.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(a.metrics)))}, opts...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// start runs the agent until the returned func stops it; Run must return
// nil then.
func (a *agent) start(t testing.TB) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// counter sums the agent's counter name over the data points whose
// attribute key has value want ("" matches all).
func (a *agent) counter(t *testing.T, name, key, want string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := a.metrics.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				if v, _ := dp.Attributes.Value(attribute.Key(key)); want == "" || v.AsString() == want {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestFiftyAgentsInOneProcess runs 50 Agents side by side in this test
// process against the real broker, their clusters sharing 8 config
// partitions, each with an Argo CD of its own in memory and a meter
// provider of its own. Every agent applies exactly its own cluster's
// Applications and counts exactly its own acknowledgements; an event for a
// cluster that has no agent reaches none. Then all of them stop within a
// bounded time and leave no goroutine behind.
func TestFiftyAgentsInOneProcess(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const agents, apps = 50, 2
	f := newFleet(t, 8)
	defer f.client.Close()
	fl := make([]*agent, agents)
	var es []*event.Event
	for i := range fl {
		fl[i] = f.agent(fmt.Sprintf("fleet-%02d", i))
		for j := range apps {
			es = append(es, f.upsert(fl[i].cluster, fmt.Sprintf("app-%d-%s", j, fl[i].cluster), int64(j+1)))
		}
	}
	es = append(es, f.upsert("nobody", "stray", 1))
	f.publish(f.prod, es...)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, agents)
	for i, a := range fl {
		wg.Go(func() { errs[i] = a.run.Run(ctx) })
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, a := range fl {
		for a.counter(t, "argosy.spoke.acknowledged", "result", "applied") < apps && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopped := make(chan struct{})
	cancel()
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the agents did not all stop within a minute of their context ending")
	}
	for i, a := range fl {
		if errs[i] != nil {
			t.Errorf("%s: Run = %v, want nil after its context ended", a.cluster, errs[i])
		}
		want := map[string]int64{}
		for j := range apps {
			want[fmt.Sprintf("argocd/app-%d-%s", j, a.cluster)] = int64(j + 1)
		}
		if got := a.argo.snapshot(); !maps.Equal(got, want) {
			t.Errorf("%s applied %v, want its own %v", a.cluster, got, want)
		}
		if n := a.counter(t, "argosy.spoke.acknowledged", "", ""); n != apps {
			t.Errorf("%s counted %d acknowledgements, want %d: its own", a.cluster, n, apps)
		}
		if n := a.counter(t, "argosy.events.processed", "type", events.TypeApplicationUpserted); n != apps {
			t.Errorf("%s counted %d upserts processed, want %d", a.cluster, n, apps)
		}
	}
}

// TestAgentFollowsHubKeyRotation rotates the hub's key on the real broker
// while an agent runs, anchored at the old key: a change signed by the new
// key after the rotation is applied; one signed by the old key after the
// rotation is rejected, as unverified, and never applied.
func TestAgentFollowsHubKeyRotation(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	a := f.agent("rotating")
	defer a.start(t)()
	before := f.upsert(a.cluster, "before", 1)
	f.publish(f.prod, before)
	waitApplied(t, a, "argocd/before")

	next := signer(t)
	rotation, err := events.New("//argosy.dev/hub/test", events.TypeKeyRotated, "keys/"+f.hub.KeyID(), "hub",
		schemas.KeyRotated{KeyID: f.hub.KeyID(), Next: schemas.KeyRegistered{KeyID: next.KeyID(), Owner: "hub", Role: schemas.RoleHub,
			Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(next.Public())}})
	if err != nil {
		t.Fatal(err)
	}
	both, err := f.hub.Cosigner(next) // a hub key's rotation carries both keys' signatures
	if err != nil {
		t.Fatal(err)
	}
	bothProd, err := events.NewProducer(f.client, both, f.topics)
	if err != nil {
		t.Fatal(err)
	}
	f.publish(bothProd, rotation)
	stale := f.upsert(a.cluster, "stale", 1)
	f.publish(f.prod, stale) // the retired key, after the rotation
	nextProd, err := events.NewProducer(f.client, next, f.topics)
	if err != nil {
		t.Fatal(err)
	}
	after := f.upsert(a.cluster, "after", 1)
	f.publish(nextProd, after)
	waitApplied(t, a, "argocd/after")
	if got := slices.Sorted(maps.Keys(a.argo.snapshot())); !slices.Equal(got, []string{"argocd/after", "argocd/before"}) {
		t.Errorf("applied %v: want the change before the rotation and the one signed by the new key, not the stale one", got)
	}
	if n := a.counter(t, "argosy.spoke.acknowledged", "code", schemas.RejectUnverified); n != 1 {
		t.Errorf("%d rejected as unverified, want the stale change", n)
	}
}

func waitApplied(t *testing.T, a *agent, key string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := a.argo.snapshot()[key]; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never applied; applied %v", key, a.argo.snapshot())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentReportsZeroLagUnderTransactions writes an agent's config events
// as the hub does, in transactions (ConfigWriter). Once the agent has
// applied them, its heartbeat must report the partition's last stable
// offset as its config offset and a lag of zero: transaction markers take
// offsets too, and an agent that stops short of them reports a lag that
// never goes away.
func TestAgentReportsZeroLagUnderTransactions(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	a := f.agent("transactional")
	w := f.configWriter("txn")
	for i := range 3 {
		if _, err := w.Write(t.Context(), f.upsert(a.cluster, fmt.Sprintf("txn-%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	defer a.start(t)()
	waitApplied(t, a, "argocd/txn-2")
	topic := f.topics[events.TopicConfig]
	part := events.NewPartitioner(nil).PartitionOf(a.cluster, 2)
	// Three transactions end at offset 6, three records and three markers;
	// the coordinator writes the markers after EndTransaction returns.
	var end kadm.ListedOffset
	for deadline := time.Now().Add(30 * time.Second); end.Offset != 6; time.Sleep(20 * time.Millisecond) {
		ends, err := kadm.NewClient(f.client).ListCommittedOffsets(t.Context(), topic)
		if err != nil {
			t.Fatal(err)
		}
		end, _ = ends.Lookup(topic, part)
		if time.Now().After(deadline) {
			t.Fatalf("the last stable offset is %d, want 6", end.Offset)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.Bootstrap(t)), kgo.ConsumeTopics(f.topics[events.TopicStatus]),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pollCtx, pollCancel := context.WithTimeout(t.Context(), time.Minute)
	defer pollCancel()
	var last schemas.Heartbeat
	for pollCtx.Err() == nil {
		for _, rec := range cl.PollFetches(pollCtx).Records() {
			if header(rec, "ce_type") != events.TypeHeartbeat || string(rec.Key) != a.cluster {
				continue
			}
			last = schemas.Heartbeat{} // the lag is left out when it is zero
			if err := json.Unmarshal(rec.Value, &last); err != nil {
				t.Fatal(err)
			}
			if last.ConfigLag == 0 && last.ConfigOffset == end.Offset {
				return
			}
		}
	}
	t.Fatalf("last heartbeat: config offset %d, lag %d; want the last stable offset %d and no lag", last.ConfigOffset, last.ConfigLag, end.Offset)
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

// BenchmarkAgentApplyLatency measures the time from a config event's append
// (the hub's Publish returning) to the agent's apply of it, one event at a
// time on the real broker, with the agent following the trust topic as in
// production. It reports the median and the largest.
//
//	go test -tags integration -run '^$' -bench BenchmarkAgentApplyLatency -benchtime 20x ./spoke/
func BenchmarkAgentApplyLatency(b *testing.B) {
	f := newFleet(b, 2)
	defer f.client.Close()
	a := f.agent("latency")
	defer a.start(b)()
	gen := int64(0)
	for _, named := range []bool{true, false} {
		prod := f.prod
		name := "no-trust-offset"
		if named {
			prod, name = f.namingProducer(), "trust-offset"
		}
		b.Run(name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				gen++
				start := time.Now()
				f.publish(prod, f.upsert(a.cluster, "app", gen))
				for a.argo.snapshot()["argocd/app"] != gen {
					if time.Since(start) > time.Minute {
						b.Fatalf("generation %d not applied within a minute", gen)
					}
					time.Sleep(time.Millisecond)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "ms-max")
		})
	}
}

// namingProducer returns a producer that signs as the hub does: naming
// how far it has read the trust topic, which a follower of its own reads
// until the test ends.
func (f *fleet) namingProducer() *events.Producer {
	f.t.Helper()
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", f.hub.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(f.topics))
	if err != nil {
		f.t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	follower, err := events.NewTrustFollower(kafkatest.Client(f.t, events.TrustConsumeOpts(f.topics)...), f.topics[events.TopicTrust], in, keys)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- follower.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Error(err)
		}
	})
	if err := keys.WaitCovers(f.t.Context(), time.Now()); err != nil {
		f.t.Fatal(err)
	}
	p, err := events.NewProducer(f.client, f.hub.WithTrustOffset(keys.TrustRead), f.topics)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}
