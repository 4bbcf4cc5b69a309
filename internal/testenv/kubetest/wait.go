package kubetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// WaitApplication polls the Application name until ok holds, for up to three
// minutes, and returns it. On timeout it fails the test with the last status
// seen.
func WaitApplication(t testing.TB, apps dynamic.ResourceInterface, name string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var last *unstructured.Unstructured
	for {
		a, err := apps.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = a
			if ok(a) {
				return a
			}
		}
		select {
		case <-ctx.Done():
			var status map[string]any
			if last != nil {
				status, _, _ = unstructured.NestedMap(last.Object, "status")
			}
			t.Fatalf("application %s never reached the wanted state: %v; status: %v", name, errors.Join(ctx.Err(), err), status)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitGone polls get until it reports NotFound, for up to two minutes.
func WaitGone(t testing.TB, get func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := get()
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still there after 2 minutes (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Ran is what Argo CD did with one operation: every distinct time it
// started it, in order, and its last phase.
type Ran struct {
	Starts []string
	Phase  string
}

// WatchOperations watches the Applications of apps that opts selects until
// the test ends, and records, per value of the operation info entry named
// info (the request id an operation carries), every start and the last
// phase Argo CD gave it in status.operationState. The function it returns
// is what was seen so far.
func WatchOperations(t testing.TB, apps dynamic.ResourceInterface, opts metav1.ListOptions, info string) func() map[string]Ran {
	t.Helper()
	w, err := apps.Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]Ran{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			st, _, _ := unstructured.NestedMap(u.Object, "status", "operationState")
			started, _, _ := unstructured.NestedString(st, "startedAt")
			phase, _, _ := unstructured.NestedString(st, "phase")
			infos, _, _ := unstructured.NestedSlice(st, "operation", "info")
			for _, i := range infos {
				m, _ := i.(map[string]any)
				id, _ := m["value"].(string)
				if m["name"] != info || started == "" {
					continue
				}
				mu.Lock()
				r := seen[id]
				if len(r.Starts) == 0 || r.Starts[len(r.Starts)-1] != started {
					r.Starts = append(r.Starts, started)
				}
				r.Phase = phase
				seen[id] = r
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() map[string]Ran {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]Ran, len(seen))
		for k, v := range seen {
			out[k] = Ran{Starts: append([]string(nil), v.Starts...), Phase: v.Phase}
		}
		return out
	}
}
