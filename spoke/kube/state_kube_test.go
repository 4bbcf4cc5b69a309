//go:build integration

package kube_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// stateBytes is the size of the data of every ConfigMap in ns.
func stateBytes(tb testing.TB, dyn dynamic.Interface, ns string) int {
	tb.Helper()
	l, err := dyn.Resource(configMaps).Namespace(ns).List(tb.Context(), metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, cm := range l.Items {
		data, _ := cm.Object["data"].(map[string]any)
		for k, v := range data {
			s, _ := v.(string)
			n += len(k) + len(s)
		}
	}
	return n
}

// TestState checks the state's records, marks and pruning on the real
// apiserver: one ConfigMap per key, a mark kept when its Application's
// record is forgotten, a ConfigMap deleted once it holds nothing, and a
// write that holds only over the record it expects.
func TestState(t *testing.T) {
	e := kubetest.Current(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	state, err := kube.NewState(dyn, ns, "state")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		l, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelState + "=state"})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	app, gone, op := "Application."+ns+".web", "Application."+ns+".old", "Operation.req-1"
	spec := json.RawMessage(`{"project":"default"}`)
	for key, a := range map[string]spoke.Applied{
		app:  {Generation: 2, Spec: spec, SpecHash: "h"},
		gone: {Generation: 3, Deleted: true, Transient: true},
		op:   {Generation: 1, Transient: true, Pending: true},
	} {
		if err := state.Put(ctx, key, a); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := state.Get(ctx, app); err != nil || !ok || got.Generation != 2 || string(got.Spec) != string(spec) {
		t.Fatalf("Get(%s) = %+v, %v, %v", app, got, ok, err)
	}
	if _, ok, err := state.Get(ctx, "Application."+ns+".none"); err != nil || ok {
		t.Fatalf("a key never put: %v, %v", ok, err)
	}
	marks := map[string]spoke.DeployMark{ns + "/web": {UID: "u1", LastHistoryID: 4}, ns + "/old": {UID: "u2", LastHistoryID: 1}}
	if err := state.SaveMarks(ctx, marks, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d ConfigMaps for 3 keys, two with marks", n)
	}
	asked := map[string]bool{}
	n, err := state.Prune(ctx, func(key string, a spoke.Applied) bool { asked[key] = true; return key == gone })
	if err != nil || n != 1 || len(asked) != 2 {
		t.Fatalf("Prune forgot %d records (%v), was asked about %v; want 1, about the transient ones only", n, err, asked)
	}
	if _, ok, _ := state.Get(ctx, gone); ok {
		t.Error("a forgotten record is still there")
	}
	if got, err := state.Marks(ctx); err != nil || len(got) != 2 || got[ns+"/old"].LastHistoryID != 1 {
		t.Errorf("marks after the prune: %v, %v; want both kept", got, err)
	}
	if err := state.SaveMarks(ctx, nil, []string{ns + "/old"}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d ConfigMaps, want 2: one that holds nothing is deleted", n)
	}
	// A write that holds only if the record is still as read: an
	// operation another agent ended is not queued again.
	ended := spoke.Applied{Generation: 1, EventID: "e1", Transient: true, Phase: spoke.OperationEnded}
	if err := state.Put(ctx, op, ended); err != nil {
		t.Fatal(err)
	}
	queued := ended
	queued.Phase = spoke.OperationQueued
	swapped, err := state.Swap(ctx, op, queued, func(cur spoke.Applied, found bool) bool { return !found })
	if got, _, _ := state.Get(ctx, op); err != nil || swapped || got.Phase != spoke.OperationEnded {
		t.Errorf("Swap over a record it did not expect: swapped %v (%v), record %+v; want nothing written", swapped, err, got)
	}
	swapped, err = state.Swap(ctx, op, queued, func(cur spoke.Applied, found bool) bool { return found && cur.Phase == spoke.OperationEnded })
	if got, _, _ := state.Get(ctx, op); err != nil || !swapped || got.Phase != spoke.OperationQueued {
		t.Errorf("Swap over the record it expected: swapped %v (%v), record %+v; want it written", swapped, err, got)
	}
	if open, err := state.OpenOperations(ctx); err != nil || len(open) != 1 || open[op].EventID != "e1" {
		t.Errorf("open operations %v, %v; want %s", open, err, op)
	}

	if _, err := kube.NewState(dyn, ns, strings.Repeat("x", 64)); err == nil {
		t.Error("a name too long for a label is taken")
	}
}

// BenchmarkStateApply measures what the applier does for each config event
// on the real apiserver, with the agent's state already holding the records
// of apps Applications: a server-side apply of the Application, then a read
// and a write of its record in the state. It reports the applies per
// second and the size of the whole state.
func BenchmarkStateApply(b *testing.B) {
	e := kubetest.Current(b)
	if err := e.InstallArgoCDCRDs(b.Context()); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(e.Admin)
	cfg.QPS = -1 // no client-side rate limit: measure the API server
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	argo, err := argocd.New(dyn, spoke.FieldManager)
	if err != nil {
		b.Fatal(err)
	}
	for _, apps := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			ctx := b.Context()
			ns := e.Namespace(b)
			state, err := kube.NewState(dyn, ns, "argosy-spoke-state")
			if err != nil {
				b.Fatal(err)
			}
			key := func(i int) string { return fmt.Sprintf("%s.%s.app-%05d", spoke.KindApplication, ns, i) }
			for i := range apps {
				if err := state.Put(ctx, key(i), spoke.Applied{Generation: 1, EventID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i),
					Offset: int64(i)}); err != nil {
					b.Fatalf("the state took %d records, not the %dth: %v", i, i+1, err)
				}
			}
			spec, err := json.Marshal(map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "app", "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := key(i % apps)
				prev, _, err := state.Get(ctx, k)
				if err != nil {
					b.Fatal(err)
				}
				obj := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindApplication, Namespace: ns, Name: fmt.Sprintf("app-%05d", i%apps)},
					Spec: spec, Generation: prev.Generation + 1}
				if err := argo.Apply(ctx, obj); err != nil {
					b.Fatal(err)
				}
				if err := state.Put(ctx, k, spoke.Applied{Generation: obj.Generation, EventID: fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i),
					Offset: int64(apps + i)}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
			b.ReportMetric(float64(stateBytes(b, dyn, ns)), "state-bytes")
		})
	}
}
