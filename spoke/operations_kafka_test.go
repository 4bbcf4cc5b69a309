//go:build integration

package spoke_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// outcomes reads the status topic from its start until done says so, and
// returns, per config event id, every acknowledgement in order: "applied",
// a rejection code, or "completed:" and Argo CD's phase.
func (w *world) outcomes(done func(map[string][]string) bool) map[string][]string {
	w.t.Helper()
	cl := kafkatest.Client(w.t, kgo.ConsumeTopics(w.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	dec, err := events.NewDecoder(events.NewVerifier(w.reg))
	if err != nil {
		w.t.Fatal(err)
	}
	got := map[string][]string{}
	ctx, cancel := context.WithTimeout(w.t.Context(), 3*time.Minute)
	defer cancel()
	for !done(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			w.t.Fatalf("outcomes so far %v", got)
		}
		for _, r := range fs.Records() {
			d, err := dec.Decode(ctx, r)
			if err != nil {
				w.t.Fatalf("a status event does not decode: %v", err)
			}
			switch p := d.Data.(type) {
			case *schemas.ConfigApplied:
				got[p.EventID] = append(got[p.EventID], "applied")
			case *schemas.ConfigRejected:
				got[p.EventID] = append(got[p.EventID], p.Code)
			case *schemas.OperationCompleted:
				got[p.EventID] = append(got[p.EventID], "completed:"+p.Phase)
			}
		}
	}
	return got
}

// starts watches the Application name and records every operation Argo
// CD ran on it: per request id, the start time of each run.
func (w *world) starts(name string) func() map[string][]string {
	w.t.Helper()
	ran := kubetest.WatchOperations(w.t, w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace),
		metav1.ListOptions{FieldSelector: "metadata.name=" + name}, argocd.InfoRequest)
	return func() map[string][]string {
		out := map[string][]string{}
		for id, r := range ran() {
			out[id] = r.Starts
		}
		return out
	}
}

func requestOf(t *testing.T, e *event.Event) string {
	t.Helper()
	var p schemas.OperationRequested
	if err := e.DataAs(&p); err != nil {
		t.Fatal(err)
	}
	return p.RequestID
}

// TestOperationBurstRunsEachOnce asks for twelve syncs of one Application
// at once, on the real Argo CD. Argo CD runs one operation at a time and
// the agent used to write each into the Application's operation field as
// it read it, so all but a few were acknowledged applied and never ran.
// Now each is started when Argo CD is free (the first after a sync someone
// made in the cluster): every one is acknowledged applied once Argo CD took
// it, then completed with Argo CD's phase, and Argo CD ran each exactly
// once, in the order asked.
func TestOperationBurstRunsEachOnce(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	w.applyAllWithin(time.Minute, w.app(1))
	starts := w.starts(name)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := w.run(ctx, "spoke."+w.cluster)
	var burst []*event.Event
	for range 12 {
		burst = append(burst, w.operation(name, schemas.OperationSync, 0))
	}
	// Someone syncs in the cluster first: the burst waits for it too.
	local := "local-" + w.ns
	if err := w.argo.Operate(t.Context(), argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name},
		argocd.Operation{Kind: schemas.OperationSync, RequestID: local, RequestedBy: "bob"}); err != nil {
		t.Fatal(err)
	}
	w.publish(w.hub, burst...)
	got := w.outcomes(func(m map[string][]string) bool {
		for _, e := range burst {
			if n := len(m[e.ID()]); n == 0 || !strings.HasPrefix(m[e.ID()][n-1], "completed:") {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ran := starts()
	if len(ran[local]) != 1 {
		t.Errorf("the sync made in the cluster started %d times, want once", len(ran[local]))
	}
	var order []string
	for i, e := range burst {
		if want := []string{"applied", "completed:Succeeded"}; fmt.Sprint(got[e.ID()]) != fmt.Sprint(want) {
			t.Errorf("sync %d: acknowledged %v, want %v", i, got[e.ID()], want)
		}
		id := requestOf(t, e)
		if len(ran[id]) != 1 {
			t.Errorf("sync %d (%s): Argo CD started it %d times (%v), want once", i, id, len(ran[id]), ran[id])
			continue
		}
		order = append(order, ran[id][0])
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("sync %d started at %s, before sync %d at %s", i, order[i], i-1, order[i-1])
		}
	}
}

// gatedArgo is an Argo CD whose Start waits, once, until the test lets it
// go: an agent frozen after it decided to start an operation and before
// its write reached Argo CD.
type gatedArgo struct {
	*argocd.Client
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	result  chan error
}

func (g *gatedArgo) Start(ctx context.Context, ref argocd.Ref, op argocd.Operation, version string) error {
	gated := false
	g.once.Do(func() { gated = true })
	if !gated {
		return g.Client.Start(ctx, ref, op, version)
	}
	close(g.entered)
	<-g.release
	err := g.Client.Start(ctx, ref, op, version)
	g.result <- err
	return err
}

// TestFrozenAgentStartsNothingTwice freezes one agent of the cluster right
// before it writes a queued sync to Argo CD, lets a second agent (the one
// that took over the Lease) run that sync and the next to their ends, and
// then thaws the first. Its write is refused, as the Application changed
// since it decided, and Argo CD ran each sync exactly once.
func TestFrozenAgentStartsNothingTwice(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	w.applyAllWithin(time.Minute, w.app(1))
	starts := w.starts(name)
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	var ids []string
	for i := range 2 { // as the applier queues them
		p := &schemas.OperationRequested{Resource: res, RequestID: fmt.Sprintf("fenced-%d-%s", i, w.ns), Operation: schemas.OperationSync}
		ids = append(ids, p.RequestID)
		if err := w.state.Put(t.Context(), "Operation."+p.RequestID, spoke.Applied{Generation: 1, EventID: "event-" + p.RequestID,
			Offset: int64(100 + i), Transient: true, Phase: spoke.OperationQueued, Request: p, At: time.Now().UTC(),
			Until: time.Now().Add(time.Hour).UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	operator := func(argo spoke.ArgoCD) *spoke.Operator {
		a, err := spoke.NewApplier(w.cluster, argo, w.state, w.pub, w.keys.Sealing, spoke.WithLogger(w.log))
		if err != nil {
			t.Fatal(err)
		}
		op, err := a.Operator()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	gate := &gatedArgo{Client: w.argo, entered: make(chan struct{}), release: make(chan struct{}), result: make(chan error, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	frozen := make(chan error, 1)
	go func() { frozen <- operator(gate).Run(ctx) }()
	select {
	case <-gate.entered:
	case <-time.After(time.Minute):
		t.Fatal("the first agent never came to start the sync")
	}

	bctx, bcancel := context.WithCancel(t.Context())
	defer bcancel()
	other := make(chan error, 1)
	go func() { other <- operator(w.argo).Run(bctx) }()
	for _, id := range ids {
		waitPhase(t, w.state, "Operation."+id, spoke.OperationEnded)
	}
	bcancel()
	if err := <-other; err != nil {
		t.Fatal(err)
	}

	close(gate.release)
	if err := <-gate.result; !errors.Is(err, spoke.ErrChanged) {
		t.Errorf("the thawed agent's start: %v, want it refused with ErrChanged", err)
	}
	time.Sleep(3 * time.Second) // the thawed agent looks again, and must find nothing to do
	cancel()
	if err := <-frozen; err != nil {
		t.Fatal(err)
	}
	ran := starts()
	for _, id := range ids {
		if len(ran[id]) != 1 {
			t.Errorf("%s: Argo CD started it %d times (%v), want once", id, len(ran[id]), ran[id])
		}
	}
	a, err := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hist, _, _ := unstructured.NestedSlice(a.Object, "status", "history"); len(hist) != len(ids) {
		t.Errorf("the Application's history has %d syncs, want %d: %v", len(hist), len(ids), hist)
	}
}

// waitPhase waits for the state record key to be in phase.
func waitPhase(t *testing.T, st spoke.StateStore, key, phase string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, ok, err := st.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if ok && r.Phase == phase {
			return
		}
	}
	t.Fatalf("%s never reached phase %s", key, phase)
}

// TestReplaysRefusedAfterPruning re-appends captured config records after
// the agent forgot their records, with the ages shortened (an operation
// may start 10 s after it was asked for, a config event may reach the log
// 40 s after it was signed, clocks within 1 s), by the rule the defaults
// follow. A sync re-appended after its record was pruned (by default, 10
// minutes to an hour later) does not run again; an upsert re-appended after
// the deletion's record was pruned (by default, up to 7 days later) does
// not bring the deleted Application back.
func TestReplaysRefusedAfterPruning(t *testing.T) {
	w := newWorld(t)
	w.opts = []spoke.Option{spoke.WithOperationMaxAge(10 * time.Second), spoke.WithStaleness(40*time.Second, time.Second)}
	w.decOpts = []events.Option{events.WithStaleness(40*time.Second, time.Second)}
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	starts := w.starts(name)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := w.run(ctx, "spoke."+w.cluster)

	up := w.app(1)
	upRec := w.publish(w.hub, up)[0]
	w.outcomes(func(m map[string][]string) bool { return len(m[up.ID()]) == 1 })
	sync := w.operation(name, schemas.OperationSync, 0)
	var p schemas.OperationRequested
	if err := sync.DataAs(&p); err != nil {
		t.Fatal(err)
	}
	p.ExpiresAt = ptr(time.Now().Add(time.Hour).UTC()) // as the hub sets it
	if err := sync.SetData("application/json", p); err != nil {
		t.Fatal(err)
	}
	syncRec := w.publish(w.hub, sync)[0]
	w.outcomes(func(m map[string][]string) bool { return len(m[sync.ID()]) == 2 })
	delRes := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 2}
	del := w.event(events.TypeApplicationDeleted, delRes, schemas.ApplicationDeleted{Resource: delRes, Cascade: true})
	w.publish(w.hub, del)
	kubetest.WaitGone(t, func() error { _, err := apps.Get(ctx, name, metav1.GetOptions{}); return err })

	// The sync's time is up: its record goes, and a copy of it is refused.
	prune := func(key string, until time.Time) {
		t.Helper()
		time.Sleep(time.Until(until) + 100*time.Millisecond)
		if _, err := w.state.Prune(t.Context(), func(_ string, r spoke.Applied) bool { return spoke.Forgettable(r, time.Now()) }); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := w.state.Get(t.Context(), key); err != nil || ok {
			t.Fatalf("%s is still in the state (%v) after its time", key, err)
		}
	}
	opKey := "Operation." + p.RequestID
	prune(opKey, sync.Time().Add(10*time.Second+time.Second)) // its expiry, and the skew
	replay(t, syncRec)
	got := w.outcomes(func(m map[string][]string) bool { return len(m[sync.ID()]) == 3 })
	// Not performed: it expired by this agent's age. Its code is stale,
	// not replay: every reader's replay rule takes 10 minutes, and the copy
	// came within them.
	if want := []string{"applied", "completed:Succeeded", schemas.RejectStale}; fmt.Sprint(got[sync.ID()]) != fmt.Sprint(want) {
		t.Errorf("the sync and its copy: %v, want %v", got[sync.ID()], want)
	}

	// The deletion is remembered while the decoder still accepts a copy
	// of the upsert before it: the copy is refused by its generation.
	appKey := "Application." + kubetest.ArgoNamespace + "." + name
	rec, kept, err := w.state.Get(t.Context(), appKey)
	if until := del.Time().Add(40*time.Second + time.Second); rec.Until.Sub(until).Abs() > time.Millisecond {
		t.Errorf("the deletion's record is kept until %s, want %s: the decoder's maximum age and the skew after its signing", rec.Until, until)
	}
	if err != nil || !kept || !rec.Deleted {
		t.Fatalf("the deletion's record after the operation's was pruned: %+v %v %v, want it kept", rec, kept, err)
	}
	replay(t, upRec)
	got = w.outcomes(func(m map[string][]string) bool { return len(m[up.ID()]) == 2 })
	if got[up.ID()][1] != schemas.RejectStale {
		t.Errorf("the upsert's copy while the deletion is remembered: %v, want it rejected as stale", got[up.ID()])
	}

	// The deletion's time is up: its record goes, and a copy of the
	// upsert before it is older than the decoder accepts.
	prune(appKey, rec.Until)
	replay(t, upRec)
	got = w.outcomes(func(m map[string][]string) bool { return len(m[up.ID()]) == 3 })
	if got[up.ID()][2] != schemas.RejectUnverified {
		t.Errorf("the upsert's copy after the deletion was forgotten: %v, want it refused by the decoder", got[up.ID()])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted Application is back: %v", err)
	}
	if ran := starts()[p.RequestID]; len(ran) != 1 {
		t.Errorf("the sync ran %d times (%v), want once", len(ran), ran)
	}
}

// replay appends a copy of rec, as anyone who may write the topic can.
func replay(t *testing.T, rec *kgo.Record) {
	t.Helper()
	cp := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
	if err := kafkatest.Client(t, events.ProducerOpts(nil)...).ProduceSync(t.Context(), cp).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestRedeliveredOperationIsDecided runs a sync on an Application in a
// namespace the agent may not read, and a good change after it; then
// delivers both again, as after a crash before the offset was committed.
// The sync is rejected for good the first time and is not retried on
// redelivery, and the good change is acknowledged both times: the
// partition never waits on it.
func TestRedeliveredOperationIsDecided(t *testing.T) {
	w := newWorld(t)
	cfg := kubetest.Current(t).ServiceAccount(t, kubetest.ArgoNamespace, "narrow-"+w.ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "delete"}}})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.argo = newArgo(t, dyn)
	res := schemas.Resource{Cluster: w.cluster, Namespace: "default", Name: "elsewhere-" + w.ns, Generation: 1}
	sync := w.event(events.TypeOperationRequested, res, schemas.OperationRequested{Resource: res, RequestID: "req-elsewhere-" + w.ns,
		Operation: schemas.OperationSync})
	good := w.appIn(kubetest.ArgoNamespace, "allowed-"+w.ns)
	got := w.applyAllWithin(30*time.Second, sync, good)
	if got[sync.ID()] != schemas.RejectApplyFailed || !strings.Contains(w.reason(sync.ID()), "forbidden") {
		t.Errorf("the sync: %q (%s), want %q naming forbidden", got[sync.ID()], w.reason(sync.ID()), schemas.RejectApplyFailed)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	done := w.run(ctx, "spoke-again."+w.cluster)
	again := w.outcomes(func(m map[string][]string) bool { return len(m[good.ID()]) >= 2 })
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the good change was acknowledged again after %s: the redelivered sync held up the partition", took)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again[sync.ID()]) != fmt.Sprint([]string{schemas.RejectApplyFailed}) {
		t.Errorf("the sync across both deliveries: %v, want rejected once", again[sync.ID()])
	}
}
