//go:build integration

package kube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/spoke/kube"
)

var fastLease = kube.LeaseTiming{Duration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}

// TestLease checks the Lease on the real apiserver: a second candidate
// waits while the first holds it and takes it as soon as the first hands
// it back; and a holder whose Lease another writer takes stops at once
// with ErrLeaseLost, its lead's context ended.
func TestLease(t *testing.T) {
	e := kubetest.Current(t)
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	lease := func(holder string) *kube.Lease {
		l, err := kube.NewLease(dyn, ns, "spoke", holder, fastLease, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	leading := make(chan string, 2)
	lead := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			leading <- name
			<-ctx.Done()
			return nil
		}
	}
	ctxA, stopA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() { doneA <- lease("a").Run(ctxA, lead("a")) }()
	if got := <-leading; got != "a" {
		t.Fatalf("%s leads first", got)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- lease("b").Run(t.Context(), lead("b")) }()
	select {
	case got := <-leading:
		t.Fatalf("%s leads while a holds the lease", got)
	case <-time.After(3 * fastLease.Duration):
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	select {
	case <-leading: // b took over
	case <-time.After(fastLease.Duration):
		t.Fatal("b did not take the lease handed back within its duration")
	}

	// Another writer takes the lease from b.
	leases := dyn.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).Namespace(ns)
	u, err := leases.Get(t.Context(), "spoke", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "thief", "spec", "holderIdentity"); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-doneB:
		if !errors.Is(err, kube.ErrLeaseLost) {
			t.Fatalf("b returned %v, want ErrLeaseLost", err)
		}
	case <-time.After(fastLease.RenewDeadline + time.Second):
		t.Fatal("b still leads after losing its lease")
	}
}
