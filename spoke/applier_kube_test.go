//go:build integration

package spoke_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(kafkatest.RunFunc(func() int { return kubetest.Main(m) })))
}

const partitions = 4

// world is a hub that appends signed config events and one spoke that
// applies them to a real Argo CD and acknowledges them on the real broker.
type world struct {
	t       testing.TB
	cluster string
	topics  events.Topics
	hub     *events.Producer
	hubKey  *events.Signer
	reg     *events.Registry
	dyn     dynamic.Interface
	keys    spoke.Keys
	// pub publishes as the spoke does, signed with its key.
	pub   *events.Producer
	state *kube.State
	log   *slog.Logger
	// argo is the applier's Argo CD; set it before the first run.
	argo    *argocd.Client
	applier *spoke.Applier
	repo    *kubetest.Repo
	ns      string
	// opts are the applier's options, and decOpts the decoder's; set
	// them before the first run.
	opts    []spoke.Option
	decOpts []events.Option
}

// testLog is a logger whose output the test prints if it fails.
func testLog(t testing.TB) *slog.Logger {
	var mu sync.Mutex
	var buf bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("spoke log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func signer(t testing.TB) *events.Signer {
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newWorld(t testing.TB) *world {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, cluster: "spoke-" + e.Namespace(t), topics: events.DefaultTopics(kafkatest.Prefix(t)), repo: kubetest.NewRepo(t)}
	w.ns = w.cluster[len("spoke-"):]
	adm := kadm.NewClient(kafkatest.Client(t))
	if err := events.EnsureTopics(t.Context(), adm, w.topics, events.TopicPlan(partitions, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	hubKey := signer(t)
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	clusterKey := events.Key{ID: events.KeyID(keys.Signing.Public().(ed25519.PublicKey)), Owner: w.cluster, Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: keys.Signing.Public().(ed25519.PublicKey)}
	w.reg = events.NewRegistry(events.HubAnchor("hub", hubKey.Public()), clusterKey)
	client := kafkatest.Client(t, events.ProducerOpts(nil)...)
	w.hubKey = hubKey
	if w.hub, err = events.NewProducer(client, hubKey, w.topics); err != nil {
		t.Fatal(err)
	}
	spokeSigner, err := events.NewSigner(keys.Signing)
	if err != nil {
		t.Fatal(err)
	}
	spokeProducer, err := events.NewProducer(client, spokeSigner, w.topics)
	if err != nil {
		t.Fatal(err)
	}
	if w.dyn, err = dynamic.NewForConfig(e.Admin); err != nil {
		t.Fatal(err)
	}
	w.keys, w.pub, w.log = keys, spokeProducer, testLog(t)
	w.state = newState(t, w.dyn, "argosy-spoke-"+w.cluster)
	w.argo = newArgo(t, w.dyn)
	return w
}

// newArgo is the Argo CD client an agent uses, on dyn.
func newArgo(t testing.TB, dyn dynamic.Interface, opts ...argocd.Option) *argocd.Client {
	t.Helper()
	a, err := argocd.New(dyn, spoke.FieldManager, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newState is an agent's state in ConfigMap name of the Argo CD namespace.
func newState(t testing.TB, dyn dynamic.Interface, name string) *kube.State {
	t.Helper()
	s, err := kube.NewState(dyn, kubetest.ArgoNamespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newWatcher watches the Applications of the Argo CD namespace.
func newWatcher(t testing.TB, dyn dynamic.Interface) *argocd.Watcher {
	t.Helper()
	wa, err := argocd.NewWatcher(dyn, kubetest.ArgoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	return wa
}

// newApplier is the world's applier on its Argo CD, made once.
func (w *world) newApplier() *spoke.Applier {
	w.t.Helper()
	if w.applier == nil {
		a, err := spoke.NewApplier(w.cluster, w.argo, w.state, w.pub, w.keys.Sealing, append([]spoke.Option{spoke.WithLogger(w.log)}, w.opts...)...)
		if err != nil {
			w.t.Fatal(err)
		}
		w.applier = a
	}
	return w.applier
}

// reporter publishes the world's status deltas, every 200 ms.
func (w *world) reporter() *spoke.Reporter {
	w.t.Helper()
	rep, err := spoke.NewReporter(w.cluster, w.pub, spoke.WithWindow(200*time.Millisecond))
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

// intake reads through dec and dead-letters to the world's topic.
func (w *world) intake(dec *events.Decoder) *events.Intake {
	w.t.Helper()
	dlq, err := events.NewDeadLetter(kafkatest.Client(w.t, events.ProducerOpts(nil)...), w.topics[events.TopicDeadLetter])
	if err != nil {
		w.t.Fatal(err)
	}
	in, err := events.NewIntake(dec, dlq, events.WithLogger(w.log))
	if err != nil {
		w.t.Fatal(err)
	}
	return in
}

// run reads the spoke's config partition with group until ctx ends.
func (w *world) run(ctx context.Context, group string, opts ...events.Option) <-chan error {
	cl := kafkatest.Client(w.t, events.ReaderOpts()...)
	dec, err := events.NewDecoder(events.NewVerifier(w.reg), append([]events.Option{events.WithTarget(w.cluster), events.WithTopics(w.topics)},
		w.decOpts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	p := events.NewPartitioner(nil).PartitionOf(w.cluster, partitions)
	applier := w.newApplier()
	rd, err := events.NewReader(cl, w.intake(dec), w.topics[events.TopicConfig], group,
		append([]events.Option{events.WithPartitions(p), events.WithSkip(func(r *kgo.Record) bool { return string(r.Key) != w.cluster }), events.OnRefused(applier.Refused),
			events.WithLogger(w.log)}, opts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	op, err := applier.Operator()
	if err != nil {
		w.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return rd.Run(gctx, applier.Handle) })
		g.Go(func() error { return op.Run(gctx) })
		done <- g.Wait()
	}()
	return done
}

func (w *world) app(gen int64) *event.Event {
	spec, _ := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}})
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: "guestbook-" + w.ns, Generation: gen}
	return w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
}

func (w *world) event(typ string, res schemas.Resource, data any) *event.Event {
	subj := events.Subject{Cluster: w.cluster, Kind: "applications", Namespace: res.Namespace, Name: res.Name}
	e, err := events.New("//argosy.dev/hub/test", typ, subj.String(), w.cluster, data)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *world) publish(p *events.Producer, es ...*event.Event) []*kgo.Record {
	recs, err := p.Publish(w.t.Context(), es...)
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// acks reads the spoke's acknowledgements from the status topic until want,
// given the last acknowledgement of each event and how many there were,
// returns true.
func (w *world) acks(want func(last map[string]string, n int) bool) map[string]string {
	w.t.Helper()
	var last map[string]string
	w.outcomes(func(all map[string][]string) bool {
		last = map[string]string{} // event id -> "applied" or the rejection code
		n := 0
		for id, acks := range all {
			for _, a := range acks {
				if !strings.HasPrefix(a, "completed:") { // an operation's end is not an acknowledgement
					last[id] = a
					n++
				}
			}
		}
		return want(last, n)
	})
	return last
}

// TestSpokeAppliesAndAcknowledges appends config events for one cluster and
// checks what the spoke does with each: applies and acknowledges good ones,
// rejects replays and stale generations, drops forged ones, and applies
// nothing twice when every event is delivered again.
func TestSpokeAppliesAndAcknowledges(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	ctx, cancel := context.WithCancel(t.Context())
	done := w.run(ctx, "spoke."+w.cluster)

	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "guestbook-" + w.ns
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	up1 := w.app(1)
	sync := w.event(events.TypeOperationRequested, res, schemas.OperationRequested{Resource: res, RequestID: "r1", Operation: schemas.OperationSync})
	recs := w.publish(w.hub, up1, sync)
	up2 := w.app(2)
	w.publish(w.hub, up2)

	// A replay: the same signed event appended again.
	replay := &kgo.Record{Topic: recs[0].Topic, Partition: recs[0].Partition, Key: recs[0].Key, Value: recs[0].Value, Headers: recs[0].Headers}
	if err := kafkatest.Client(t, events.ProducerOpts(nil)...).ProduceSync(t.Context(), replay).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stale := w.app(1) // a new event with an old generation
	forged := w.app(9)
	w.publish(w.hub, stale)
	if p, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(nil)...), signer(t), w.topics); err != nil {
		t.Fatal(err)
	} else {
		w.publish(p, forged)
	}
	// A change the hub signed for another cluster, keyed to this one: the
	// decoder refuses it (wrong_target), whatever the record key says.
	elsewhere := schemas.Resource{Cluster: "other-" + w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 5}
	misrouted, err := events.New("//argosy.dev/hub/test", events.TypeApplicationDeleted,
		events.Subject{Cluster: elsewhere.Cluster, Kind: "applications", Namespace: elsewhere.Namespace, Name: elsewhere.Name}.String(),
		elsewhere.Cluster, schemas.ApplicationDeleted{Resource: elsewhere, Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	mr := w.publish(w.hub, misrouted)[0]
	rekeyed := &kgo.Record{Topic: recs[0].Topic, Partition: recs[0].Partition, Key: recs[0].Key, Value: mr.Value, Headers: mr.Headers}
	if err := kafkatest.Client(t, events.ProducerOpts(nil)...).ProduceSync(t.Context(), rekeyed).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The delete waits for Argo CD to take the sync: deleted first, the
	// Application would end the sync unrun, never acknowledged applied.
	w.acks(func(m map[string]string, _ int) bool { return m[sync.ID()] != "" })
	del := w.event(events.TypeApplicationDeleted, schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 3},
		schemas.ApplicationDeleted{Resource: schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 3}, Cascade: true})
	w.publish(w.hub, del)

	got := w.acks(func(m map[string]string, _ int) bool { return len(m) >= 7 && m[del.ID()] != "" })
	// up1 is acknowledged twice: applied, then its replay rejected.
	want := map[string]string{up1.ID(): schemas.RejectStale, sync.ID(): "applied", up2.ID(): "applied",
		stale.ID(): schemas.RejectStale, del.ID(): "applied", misrouted.ID(): schemas.RejectUnverified}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("event %s: %q, want %q", id, got[id], code)
		}
	}
	if got[forged.ID()] != schemas.RejectUnverified {
		t.Errorf("forged event acknowledged %q, want %q", got[forged.ID()], schemas.RejectUnverified)
	}
	kubetest.WaitGone(t, func() error { _, err := apps.Get(ctx, name, metav1.GetOptions{}); return err })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Everything delivered again, as after a lost checkpoint: nothing is
	// applied twice, and the deleted Application does not come back.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	done = w.run(ctx, "spoke-again."+w.cluster)
	// Seven acknowledgements in the first pass (the forged event's too),
	// six in the second: the sync's record says the Operator acknowledged
	// it, and its redelivery changes nothing.
	again := w.acks(func(_ map[string]string, n int) bool { return n >= 13 })
	cancel()
	for _, id := range []string{up1.ID(), up2.ID(), stale.ID()} {
		if again[id] != schemas.RejectStale {
			t.Errorf("redelivered %s: %q, want stale", id, again[id])
		}
	}
	if again[del.ID()] != "applied" || again[sync.ID()] != "applied" {
		t.Errorf("redelivered delete and sync: %q %q, want applied (no-op)", again[del.ID()], again[sync.ID()])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after redelivery the deleted Application is back: %v", err)
	}
	st, ok, err := w.state.Get(t.Context(), "Application."+kubetest.ArgoNamespace+"."+name)
	if err != nil || !ok || st.Generation != 3 || !st.Deleted || st.EventID != del.ID() {
		t.Errorf("state %+v %v %v, want generation 3 deleted by %s", st, ok, err, del.ID())
	}
}
