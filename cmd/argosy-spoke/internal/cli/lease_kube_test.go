//go:build integration

package cli_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// TestOneSpokeWritesPerCluster runs two argosy-spoke processes for one
// cluster, as a rolling update does. Only the one that holds the Lease
// applies; the other waits. A SIGKILL of the holder hands the Lease over
// after about its duration, and across the handover every event is
// acknowledged as applied exactly once: none lost, none applied twice.
func TestOneSpokeWritesPerCluster(t *testing.T) {
	r := newSpokeRig(t)
	dyn, err := dynamic.NewForConfig(r.e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	leases := dyn.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).
		Namespace(r.ns)
	waitHolder := func(p *testproc.Proc) time.Duration {
		t.Helper()
		start, want := time.Now(), fmt.Sprintf("_%d", p.Pid())
		for {
			l, err := leases.Get(t.Context(), r.lease(), metav1.GetOptions{})
			if err == nil {
				if h, _, _ := unstructured.NestedString(l.Object, "spec", "holderIdentity"); strings.HasSuffix(h, want) {
					return time.Since(start)
				}
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("process %d never held the Lease (%v); its log:\n%s", p.Pid(), err, p.LogTail())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := r.startNamed("first")
	waitHolder(first)
	second := r.startNamed("second")
	defer func() {
		if err := second.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()

	names := []string{"a-" + r.ns, "b-" + r.ns, "c-" + r.ns}
	ids := idsOf(r.upserts(1, names...))
	for _, n := range names {
		r.waitGeneration(first, n, "1")
	}
	r.readStatus(func(s *statusSeen) bool { return allAcked(s, ids) })
	if log := second.LogTail(); !strings.Contains(log, "waiting for the lease") || strings.Contains(log, "agent started") {
		t.Errorf("the second spoke did not wait for the Lease; its log:\n%s", log)
	}

	if err := syscall.Kill(first.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(0); err != nil {
		t.Fatal(err)
	}
	handover := waitHolder(second)
	t.Logf("the Lease passed to the second spoke %s after the SIGKILL (Lease duration %s)", handover.Round(time.Millisecond), rigLease.Duration)
	if limit := rigLease.Duration + 2*rigLease.RetryPeriod + time.Second; handover > limit {
		t.Errorf("handover took %s, want within the Lease duration and two retries (%s)", handover, limit)
	}
	ids = append(ids, idsOf(r.upserts(2, names...))...)
	for _, n := range names {
		r.waitGeneration(second, n, "2")
	}
	seen := r.readStatus(func(s *statusSeen) bool { return allAcked(s, ids) })
	for _, id := range ids {
		if !slices.Equal(seen.acks[id], []string{"applied"}) {
			t.Errorf("event %s acknowledged %v, want applied once", id, seen.acks[id])
		}
	}
}

func idsOf(es []*event.Event) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID()
	}
	return ids
}

// allAcked says whether every event of ids has an acknowledgement.
func allAcked(s *statusSeen, ids []string) bool {
	for _, id := range ids {
		if len(s.acks[id]) == 0 {
			return false
		}
	}
	return true
}
