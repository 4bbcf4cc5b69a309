//go:build integration

package cli_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/cmd/argosy-spoke/internal/cli"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// statusSeen is what the spoke published on the status topic.
type statusSeen struct {
	acks   map[string][]string // event id -> "applied", rejection codes or "completed:" and a phase, in order
	deltas int
	beats  int
}

// decoder verifies what the hub and this cluster's spoke wrote.
func (r *spokeRig) decoder() *events.Decoder {
	r.t.Helper()
	pub := r.keys.Signing.Public().(ed25519.PublicKey)
	reg := events.NewRegistry(events.HubAnchor("hub", r.hubPub), events.Key{ID: events.KeyID(pub), Owner: r.cluster,
		Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: pub})
	dec, err := events.NewDecoder(events.NewVerifier(reg))
	if err != nil {
		r.t.Fatal(err)
	}
	return dec
}

// readStatus reads the status topic from the start until done says so.
func (r *spokeRig) readStatus(done func(*statusSeen) bool) *statusSeen {
	r.t.Helper()
	dec := r.decoder()
	cl := r.client(kgo.ConsumeTopics(r.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	seen := &statusSeen{acks: map[string][]string{}}
	ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Minute)
	defer cancel()
	for !done(seen) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("status so far: %d acknowledged events, %d deltas, %d heartbeats", len(seen.acks), seen.deltas, seen.beats)
		}
		for _, rec := range fs.Records() {
			d, err := dec.Decode(ctx, rec)
			if err != nil {
				r.t.Fatal(err)
			}
			switch a := d.Data.(type) {
			case *schemas.ConfigApplied:
				seen.acks[a.EventID] = append(seen.acks[a.EventID], "applied")
			case *schemas.ConfigRejected:
				seen.acks[a.EventID] = append(seen.acks[a.EventID], a.Code)
			case *schemas.OperationCompleted:
				seen.acks[a.EventID] = append(seen.acks[a.EventID], "completed:"+a.Phase)
			case *schemas.ApplicationStatusChanged, *schemas.ApplicationStatusBatch:
				seen.deltas += len(schemas.StatusDeltas(a))
			case *schemas.Heartbeat:
				seen.beats++
			}
		}
	}
	return seen
}

// generations watches the Applications and records, per name, every
// generation annotation it sees, until the test ends.
func (r *spokeRig) generations() func() map[string][]int64 {
	w, err := r.apps.Watch(r.t.Context(), metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			a, ok := ev.Object.(interface {
				GetName() string
				GetAnnotations() map[string]string
			})
			if !ok {
				continue
			}
			g, err := strconv.ParseInt(a.GetAnnotations()[argocd.AnnotationGeneration], 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			if h := seen[a.GetName()]; len(h) == 0 || h[len(h)-1] != g {
				seen[a.GetName()] = append(h, g)
			}
			mu.Unlock()
		}
	}()
	r.t.Cleanup(func() { w.Stop(); <-done })
	return func() map[string][]int64 {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string][]int64, len(seen))
		for k, v := range seen {
			out[k] = append([]int64(nil), v...)
		}
		return out
	}
}

// TestSpokeSurvivesRandomKillsUnderLoad publishes a stream of changes to
// ten Applications while the real spoke is SIGKILLed again and again: at
// random moments, and once exactly between an apply and its offset commit.
// In the end every Application is at its last generation, no generation was
// ever applied out of order or rejected (so nothing was applied twice), and
// every event was acknowledged.
func TestSpokeSurvivesRandomKillsUnderLoad(t *testing.T) {
	r := newSpokeRig(t, "argosy_testhooks")
	const apps, gens = 10, 12
	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("load-%d-%s", i, r.ns)
	}
	history := r.generations()

	var published []*event.Event
	pubDone := make(chan error, 1)
	go func() { // the load: one generation of every Application every 300 ms
		for g := int64(1); g <= gens; g++ {
			es, err := r.publishUpserts(g, names...)
			if err != nil {
				pubDone <- err
				return
			}
			published = append(published, es...)
			time.Sleep(300 * time.Millisecond)
		}
		pubDone <- nil
	}()

	// First run: crash right after the third apply, before its commit.
	r.env = []string{cli.EnvCrashAfterApplies + "=3"}
	p := r.start()
	waitExit(t, p)
	r.env = nil
	kills := 1
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for range 5 { // then kills at random moments
		p = r.start()
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
		if exited, err := p.Exited(); exited {
			t.Fatalf("the spoke exited by itself (%v); log:\n%s", err, p.LogTail())
		}
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitExit(t, p)
		kills++
	}
	if err := <-pubDone; err != nil { // published is the goroutine's no more
		t.Fatal(err)
	}
	p = r.start()
	for _, n := range names {
		r.waitGeneration(p, n, strconv.Itoa(gens))
	}
	ids := make([]string, len(published))
	for i, e := range published {
		ids[i] = e.ID()
	}
	seen := r.readStatus(func(s *statusSeen) bool {
		for _, id := range ids {
			if len(s.acks[id]) == 0 {
				return false
			}
		}
		return true
	})
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}

	again := 0
	for _, id := range ids {
		for _, a := range seen.acks[id] {
			if a != "applied" {
				t.Errorf("event %s acknowledged %v: want only applied (a rejection means a replay or an out-of-order apply)", id, seen.acks[id])
			}
		}
		if len(seen.acks[id]) > 1 {
			again++ // redelivered after a kill between apply and commit: a no-op
		}
	}
	for name, h := range history() {
		for i := 1; i < len(h); i++ {
			if h[i] < h[i-1] {
				t.Errorf("%s went from generation %d back to %d: %v", name, h[i-1], h[i], h)
			}
		}
	}
	if again == 0 {
		t.Errorf("no event was redelivered, so no kill fell between an apply and its commit; the crash hook did not work")
	}
	t.Logf("%d kills, %d events, %d acknowledged again after a kill (redeliveries, applied once)", kills, len(ids), again)
}

// waitExit waits for a spoke that kills itself or was killed.
func waitExit(t *testing.T, p *testproc.Proc) {
	t.Helper()
	if exited, _ := p.WaitExit(2 * time.Minute); !exited {
		t.Fatalf("the spoke did not exit; log:\n%s", p.LogTail())
	}
	if err := p.Stop(0); err != nil {
		t.Logf("stop: %v", err) // killed: a non-zero exit is expected
	}
}

// TestSpokeCatchesUpAfterBrokerRestart runs the spoke on a broker of its
// own, stops the broker, lets the local Argo CD change while Kafka is gone,
// and starts the broker again: the spoke (never restarted) reports the
// change and applies new desired state. Its readiness (/readyz) follows
// Kafka: ready, not ready while the broker is gone, ready again.
func TestSpokeCatchesUpAfterBrokerRestart(t *testing.T) {
	b := kafkatest.StartBroker(t)
	r := newSpokeRigOn(t, b.Addr, func(opts ...kgo.Opt) *kgo.Client { return b.Client(t, opts...) })
	name := "outage-" + r.ns
	up1 := r.upserts(1, name)[0]
	p := r.start()
	defer func() {
		if err := p.Terminate(30 * time.Second); err != nil {
			t.Errorf("%v; log:\n%s", err, p.LogTail())
		}
	}()
	r.waitGeneration(p, name, "1")
	before := r.readStatus(func(s *statusSeen) bool { return len(s.acks[up1.ID()]) > 0 && s.deltas > 0 })
	ctx := t.Context()
	if _, err := p.WaitStatus(ctx, r.readyz, http.StatusOK, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if body, err := p.WaitStatus(ctx, r.readyz, http.StatusServiceUnavailable, 30*time.Second); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(body, "spoke: kafka:") {
		t.Errorf("not ready, but says %q", body)
	}
	// While Kafka is gone the local Argo CD goes on: sync the Application
	// by hand, which changes its status.
	dyn, err := dynamic.NewForConfig(r.e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
	argo, err := argocd.New(dyn, spoke.FieldManager)
	if err != nil {
		t.Fatal(err)
	}
	if err := argo.Operate(ctx, ref, spoke.Operation{Kind: schemas.OperationSync}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	if exited, err := p.Exited(); exited {
		t.Fatalf("the spoke exited while Kafka was down (%v); log:\n%s", err, p.LogTail())
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitStatus(ctx, r.readyz, http.StatusOK, time.Minute); err != nil {
		t.Fatal(err)
	}
	up2 := r.upserts(2, name)[0]
	r.waitGeneration(p, name, "2")
	after := r.readStatus(func(s *statusSeen) bool {
		return len(s.acks[up2.ID()]) > 0 && s.deltas > before.deltas && s.beats > before.beats
	})
	if a := after.acks[up2.ID()]; a[0] != "applied" {
		t.Errorf("generation 2 acknowledged %v", a)
	}
}

// TestOperationRunsOnceAcrossACrash kills the real spoke right after a
// sync reached Argo CD and before the spoke recorded it, the worst moment:
// the restarted spoke reads the same event again, finds the sync in Argo
// CD's own operation state and does not run it a second time. Argo CD
// records every sync it runs in the Application's history, so one sync
// leaves one entry.
func TestOperationRunsOnceAcrossACrash(t *testing.T) {
	r := newSpokeRig(t, "argosy_testhooks")
	name := "once-" + r.ns
	r.upserts(1, name)
	p := r.start()
	r.waitGeneration(p, name, "1")
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}
	res := schemas.Resource{Cluster: r.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	sync, err := events.New("//argosy.dev/hub/test", events.TypeOperationRequested,
		events.Subject{Cluster: r.cluster, Kind: schemas.SubjectApplications, Namespace: res.Namespace, Name: name}.String(), r.cluster,
		schemas.OperationRequested{Resource: res, RequestID: "req-once-" + r.ns, Operation: schemas.OperationSync, RequestedBy: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.prod.Publish(t.Context(), sync); err != nil {
		t.Fatal(err)
	}
	r.env = []string{cli.EnvCrashAfterOperations + "=1"}
	p = r.start()
	waitExit(t, p)
	r.env = nil
	// The sync runs to its end while the spoke is down; the restarted one
	// reads the request again.
	apps := r.apps
	kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(a.Object, "status", "operationState", "phase")
		_, pending, _ := unstructured.NestedMap(a.Object, "operation")
		return phase == "Succeeded" && !pending
	})
	p = r.start()
	seen := r.readStatus(func(s *statusSeen) bool { return len(s.acks[sync.ID()]) > 0 })
	var hist []any
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(hist) < 2; time.Sleep(time.Second) {
		a, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hist, _, _ = unstructured.NestedSlice(a.Object, "status", "history")
	}
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}
	if len(hist) != 1 {
		t.Errorf("the Application's history has %d syncs, want the one asked for: %v", len(hist), hist)
	}
	for _, ack := range seen.acks[sync.ID()] {
		if ack != "applied" && ack != "completed:Succeeded" {
			t.Errorf("the sync was acknowledged %v, want only applied and completed:Succeeded", seen.acks[sync.ID()])
		}
	}
}

// TestOperationBurstSurvivesKills asks for fifty syncs of one Application
// at once and SIGKILLs the real spoke while it works through them: once
// right after a sync reached Argo CD and before the spoke recorded it, then
// at random moments. In the end every sync was run by Argo CD exactly once,
// none was lost, and each was acknowledged applied and then completed with
// the phase Argo CD gave it.
func TestOperationBurstSurvivesKills(t *testing.T) {
	r := newSpokeRig(t, "argosy_testhooks")
	name := "burst-" + r.ns
	r.upserts(1, name)
	p := r.start()
	r.waitGeneration(p, name, "1")
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}
	history := kubetest.WatchOperations(t, r.apps, metav1.ListOptions{}, argocd.InfoRequest)
	res := schemas.Resource{Cluster: r.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	var syncs []*event.Event
	ids := map[string]string{} // event id -> request id
	for i := range 50 {
		req := fmt.Sprintf("burst-%d-%s", i, r.ns)
		e, err := events.New("//argosy.dev/hub/test", events.TypeOperationRequested,
			events.Subject{Cluster: r.cluster, Kind: schemas.SubjectApplications, Namespace: res.Namespace, Name: name}.String(), r.cluster,
			schemas.OperationRequested{Resource: res, RequestID: req, Operation: schemas.OperationSync, RequestedBy: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		syncs, ids[e.ID()] = append(syncs, e), req
	}
	if _, err := r.prod.Publish(t.Context(), syncs...); err != nil {
		t.Fatal(err)
	}
	r.env = []string{cli.EnvCrashAfterOperations + "=3"}
	p = r.start()
	waitExit(t, p)
	r.env = nil
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for range 5 {
		p = r.start()
		time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		if exited, err := p.Exited(); exited {
			t.Fatalf("the spoke exited by itself (%v); log:\n%s", err, p.LogTail())
		}
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitExit(t, p)
	}
	p = r.start()
	seen := r.readStatus(func(s *statusSeen) bool {
		for id := range ids {
			if n := len(s.acks[id]); n == 0 || !strings.HasPrefix(s.acks[id][n-1], "completed:") {
				return false
			}
		}
		return true
	})
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}
	did := history()
	again := 0
	for id, req := range ids {
		acks, h := seen.acks[id], did[req]
		if len(h.Starts) != 1 {
			t.Errorf("%s: Argo CD started it %d times (%v), want once", req, len(h.Starts), h.Starts)
		}
		applied, completed := 0, 0
		for _, a := range acks {
			switch a {
			case "applied":
				applied++
			case "completed:" + h.Phase:
				completed++
			default:
				t.Errorf("%s: acknowledged %v; Argo CD's phase is %q", req, acks, h.Phase)
			}
		}
		if applied == 0 || completed == 0 {
			t.Errorf("%s: acknowledged %v, want applied, then completed:%s", req, acks, h.Phase)
		}
		if len(acks) > 2 {
			again++
		}
	}
	t.Logf("%d syncs, %d acknowledged again after a kill", len(ids), again)
}
