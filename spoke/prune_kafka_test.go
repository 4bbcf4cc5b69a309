//go:build integration

package spoke_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestStateForgetsOldOperationsAndDeletes runs a whole agent, with its
// state in ConfigMaps, over an Application, a refresh of it, and an
// AppProject created and deleted. Once the operation has expired, the
// config events' maximum age has passed (both shortened here) and the
// offsets are committed, the state keeps the Application's
// record (with the spec drift protection restores) and nothing of the
// refresh or of the deleted AppProject: it grows with what the cluster
// holds, not with its history. A stale copy of the old delete is still
// refused by its age once its record is gone.
func TestStateForgetsOldOperationsAndDeletes(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	const maxAge = 5 * time.Second
	agent, err := spoke.New(w.cluster, w.keys, w.hubKey.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, w.argo,
		newWatcher(t, w.dyn), w.state, spoke.WithTopics(w.topics), spoke.WithOperationMaxAge(maxAge), spoke.WithLogger(w.log),
		spoke.WithStaleness(2*maxAge, time.Second),
		spoke.WithHeartbeatInterval(time.Second), spoke.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	name := "guestbook-" + w.ns
	app := w.app(1)
	refresh := w.operation(name, schemas.OperationRefresh, 0)
	proj := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: "p-" + w.ns, Generation: 1}
	projUp := w.event(events.TypeAppProjectUpserted, proj, schemas.AppProjectUpserted{Resource: proj, Spec: []byte(`{"sourceRepos":["*"]}`)})
	proj.Generation = 2
	projDel := w.event(events.TypeAppProjectDeleted, proj, schemas.AppProjectDeleted{Resource: proj})
	es := []string{app.ID(), refresh.ID(), projUp.ID(), projDel.ID()}
	w.publish(w.hub, app, refresh, projUp, projDel)
	w.acks(func(m map[string]string, _ int) bool {
		for _, id := range es {
			if m[id] != "applied" && m[id] != "" {
				t.Fatalf("event %s: %s", id, m[id])
			}
			if m[id] == "" {
				return false
			}
		}
		return true
	})

	var p schemas.OperationRequested
	if err := refresh.DataAs(&p); err != nil {
		t.Fatal(err)
	}
	appKey := spoke.KindApplication + "." + kubetest.ArgoNamespace + "." + name
	opKey, projKey := "Operation."+p.RequestID, spoke.KindAppProject+"."+proj.Namespace+"."+proj.Name
	for _, k := range []string{opKey, projKey} {
		if _, ok, err := w.state.Get(t.Context(), k); err != nil || !ok {
			t.Fatalf("record %s right after the apply: %v, %v; want it kept until it is old", k, ok, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, opKept, err1 := w.state.Get(t.Context(), opKey)
		_, projKept, err2 := w.state.Get(t.Context(), projKey)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !opKept && !projKept {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the state still holds the operation (%v) or the deleted AppProject (%v)", opKept, projKept)
		}
		time.Sleep(200 * time.Millisecond)
	}
	a, ok, err := w.state.Get(t.Context(), appKey)
	if err != nil || !ok || a.Transient || a.SpecHash == "" || argocd.SpecHash(a.Spec) != a.SpecHash {
		t.Fatalf("the Application's record %+v (%v, %v): want it kept, with its spec", a, ok, err)
	}
	cms, err := w.dyn.Resource(configMaps).Namespace(kubetest.ArgoNamespace).List(t.Context(),
		metav1.ListOptions{LabelSelector: kube.LabelState + "=argosy-spoke-" + w.cluster})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if key, _, _ := unstructured.NestedString(cm.Object, "data", "key"); key == opKey || key == projKey {
			t.Errorf("ConfigMap %s of %s is left after its record was forgotten", cm.GetName(), key)
		}
	}

	// Past its age, a copy of the refresh from back then is refused, as a
	// replay or, past the config events' age, by the decoder: not
	// performed.
	w.publish(w.hub, refresh)
	if got := w.acks(func(_ map[string]string, n int) bool { return n > len(es) }); got[refresh.ID()] != schemas.RejectReplay && got[refresh.ID()] != schemas.RejectUnverified {
		t.Errorf("an old refresh delivered again: %q, want %q (or %q, when the decoder finds it too old)", got[refresh.ID()],
			schemas.RejectReplay, schemas.RejectUnverified)
	}
}

// BenchmarkStateUnderOperationBurst measures the agent's state, in
// ConfigMaps on the real apiserver, through a burst of 10,000 refreshes of
// one Application on the real broker (Argo CD simulated: the state is what
// is measured). Operations may start 30 s after they were asked for and
// clocks are taken to be within 1 s, so each refresh's record is kept 31 s
// after its signing, and pruned by the pass after that (every 15 s). It
// reports how long the agent took to acknowledge the burst, the most state
// ConfigMaps seen, how many are left once the burst is forgotten, and how
// long that took after the last refresh was published.
func BenchmarkStateUnderOperationBurst(b *testing.B) {
	const burst, maxAge = 10_000, 30 * time.Second
	for range b.N {
		w := newWorld(b)
		cluster := sim.NewCluster()
		agent, err := spoke.New(w.cluster, w.keys, w.hubKey.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(b))}, cluster, cluster,
			w.state, spoke.WithTopics(w.topics), spoke.WithOperationMaxAge(maxAge), spoke.WithStaleness(events.DefaultMaxAge, time.Second),
			spoke.WithLogger(w.log))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- agent.Run(ctx) }()
		cms := w.dyn.Resource(configMaps).Namespace(kubetest.ArgoNamespace)
		count := func() (int, error) {
			l, err := cms.List(b.Context(), metav1.ListOptions{LabelSelector: kube.LabelState + "=argosy-spoke-" + w.cluster})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}
		app := w.app(1)
		w.publish(w.hub, app)
		w.acks(func(m map[string]string, _ int) bool { return m[app.ID()] != "" })
		settled, err := count()
		if err != nil {
			b.Fatal(err)
		}
		name := "guestbook-" + w.ns
		var es []*event.Event
		for range burst {
			es = append(es, w.operation(name, schemas.OperationRefresh, 0))
		}
		var peak atomic.Int64
		stop, sampled := make(chan struct{}), make(chan struct{})
		go func() { // the state's size every half second, until stop
			defer close(sampled)
			for {
				if n, err := count(); err == nil && int64(n) > peak.Load() {
					peak.Store(int64(n))
				}
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
		for i := 0; i < burst; i += 500 {
			w.publish(w.hub, es[i:i+500]...)
		}
		published := time.Now()
		w.acks(func(m map[string]string, _ int) bool { return m[es[burst-1].ID()] != "" })
		applied := time.Since(published)
		n := settled + 1
		for n > settled {
			if time.Since(published) > 10*time.Minute {
				b.Fatalf("after 10 minutes the state still holds %d ConfigMaps, %d when settled", n, settled)
			}
			time.Sleep(time.Second)
			if n, err = count(); err != nil {
				b.Fatal(err)
			}
		}
		close(stop)
		<-sampled
		b.ReportMetric(applied.Seconds(), "applied-s")
		b.ReportMetric(float64(peak.Load()), "peak-configmaps")
		b.ReportMetric(float64(n), "settled-configmaps")
		b.ReportMetric(time.Since(published).Seconds(), "settle-s")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
