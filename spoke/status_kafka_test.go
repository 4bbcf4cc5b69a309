//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestStatusDeltas watches a real Argo CD Application through a sync and a
// delete and checks the deltas the spoke publishes: the first is full, each
// later one carries only what changed, in sequence, and each is much smaller
// than the Application object.
func TestStatusDeltas(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rep := w.reporter()
	done := make(chan error, 1)
	go func() { done <- rep.Run(ctx, newWatcher(t, w.dyn)) }()

	name := "guestbook-" + w.ns
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
	argo := w.argo
	spec, _ := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}})
	if err := argo.Apply(ctx, &spoke.Object{Ref: ref, Spec: spec, Generation: 4}); err != nil {
		t.Fatal(err)
	}
	if err := argo.Operate(ctx, ref, spoke.Operation{Kind: schemas.OperationSync}); err != nil {
		t.Fatal(err)
	}

	dec, err := events.NewDecoder(events.NewVerifier(w.reg))
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, kgo.ConsumeTopics(w.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var deltas []*schemas.ApplicationStatusChanged
	var sizes []int
	synced, deleted, full := false, false, 0
	pollCtx, pollCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer pollCancel()
	for !deleted {
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("deltas so far: %d (synced %v)", len(deltas), synced)
		}
		for _, r := range fs.Records() {
			d, err := dec.Decode(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			// The Application's delta, alone or in a batch (then its
			// size is the batch's, an upper bound).
			i := slices.IndexFunc(schemas.StatusDeltas(d.Data), func(s *schemas.ApplicationStatusChanged) bool { return s.Name == name })
			if i < 0 {
				continue
			}
			s := schemas.StatusDeltas(d.Data)[i]
			deltas = append(deltas, s)
			sizes = append(sizes, len(r.Value))
			if s.Sync != nil && s.Sync.Status == "Synced" && !synced {
				synced = true
				// The whole Application, as the apiserver holds it, to
				// compare the deltas with.
				a, err := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(a.Object)
				if err != nil {
					t.Fatal(err)
				}
				full = len(b)
				if err := argo.Delete(ctx, ref, true); err != nil {
					t.Fatal(err)
				}
			}
			deleted = deleted || s.Deleted
		}
	}
	if !deltas[0].Full || deltas[0].Generation != 4 {
		t.Errorf("first delta %+v, want full at generation 4", deltas[0])
	}
	for i, d := range deltas {
		if d.Seq != int64(i+1) {
			t.Errorf("delta %d has seq %d", i, d.Seq)
		}
		if i > 0 && d.Full {
			t.Errorf("delta %d is full", i)
		}
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	// A measurement for the closing note, not an assertion.
	t.Logf("status bytes per change: %d deltas, %d bytes of data on average; the synced Application object is %d bytes (%.0f%% smaller)",
		len(sizes), total/len(sizes), full, 100*(1-float64(total/len(sizes))/float64(full)))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
