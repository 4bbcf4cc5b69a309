package kubetest

import (
	"context"
	"errors"
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
