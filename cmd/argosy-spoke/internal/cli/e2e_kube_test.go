//go:build integration

package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
)

// TestSpokeEndToEnd drives an Application through the real binary with
// events only: created (Argo CD syncs it automatically), updated to a new
// commit, and deleted. The spoke's acknowledgements, status deltas and
// deployment records come back on their topics.
func TestSpokeEndToEnd(t *testing.T) {
	r := newSpokeRig(t)
	r.syncPolicy = map[string]any{"automated": map[string]any{"prune": true}}
	name := "e2e-" + r.ns
	p := r.start()
	defer func() {
		if err := p.Terminate(30 * time.Second); err != nil {
			t.Errorf("%v; log:\n%s", err, p.LogTail())
		}
	}()
	up1 := r.upserts(1, name)[0]
	r.waitGeneration(p, name, "1")
	first := r.waitDeployments(name, 1)
	rev2 := r.repo.Commit(t, "v2", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: two\n"})
	up2 := r.upserts(2, name)[0] // a new generation; Argo CD follows main to rev2
	r.waitGeneration(p, name, "2")
	second := r.waitDeployments(name, 2)
	if second[1].Revision != rev2 || second[1].PreviousRevision != first[0].Revision {
		t.Errorf("second deployment %+v, want %s after %s", second[1], rev2, first[0].Revision)
	}

	res := schemas.Resource{Cluster: r.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 3}
	del, err := events.New("//argosy.dev/hub/test", events.TypeApplicationDeleted,
		events.Subject{Cluster: r.cluster, Kind: "applications", Namespace: kubetest.ArgoNamespace, Name: name}.String(), r.cluster,
		schemas.ApplicationDeleted{Resource: res, Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.prod.Publish(t.Context(), del); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitGone(t, func() error { _, err := r.apps.Get(t.Context(), name, metav1.GetOptions{}); return err })
	seen := r.readStatus(func(s *statusSeen) bool {
		return len(s.acks[up1.ID()]) > 0 && len(s.acks[up2.ID()]) > 0 && len(s.acks[del.ID()]) > 0 && s.deltas >= 3
	})
	for _, id := range []string{up1.ID(), up2.ID(), del.ID()} {
		if a := seen.acks[id]; a[0] != "applied" {
			t.Errorf("event %s acknowledged %v", id, a)
		}
	}
	if _, err := r.apps.Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Application is still there: %v", err)
	}
}

// waitDeployments reads the deployments topic until the Application has n
// deployment records, and returns them in order.
func (r *spokeRig) waitDeployments(name string, n int) []*schemas.DeploymentRecorded {
	r.t.Helper()
	dec := r.decoder()
	cl := r.client(kgo.ConsumeTopics(r.topics[events.TopicDeployments]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Minute)
	defer cancel()
	byID := map[string]bool{}
	var out []*schemas.DeploymentRecorded
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("%d deployment records of %s, want %d", len(out), name, n)
		}
		for _, rec := range fs.Records() {
			d, err := dec.Decode(ctx, rec)
			if err != nil {
				r.t.Fatal(err)
			}
			if dr, ok := d.Data.(*schemas.DeploymentRecorded); ok && dr.Name == name && !byID[dr.DeploymentID] {
				byID[dr.DeploymentID] = true
				out = append(out, dr)
			}
		}
	}
	return out
}
