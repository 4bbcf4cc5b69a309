//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestDeploymentRecords syncs a real Argo CD Application through successes,
// a failure, an outage of the recorder longer than the Application's
// history, a restart and a deletion while the recorder is away, and reads
// back what the spoke published: every deployment exactly once by id, and an
// explicit gap wherever the history was gone before it was recorded.
func TestDeploymentRecords(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	argo := w.argo
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "deploys-" + w.ns
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
	state := newState(t, w.dyn, "argosy-spoke-deploys-"+w.ns)
	cm := func(v string) map[string]string {
		return map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: " + v + "\n"}
	}
	rev := []string{w.repo.Commit(t, "v0", cm("zero"))}
	spec, err := json.Marshal(map[string]any{"project": "default", "revisionHistoryLimit": 2,
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}})
	if err != nil {
		t.Fatal(err)
	}
	if err := argo.Apply(ctx, &spoke.Object{Ref: ref, Spec: spec, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	// deploy syncs the newest commit and waits for the sync to end in phase.
	deploy := func(revision, phase string) {
		t.Helper()
		if err := argo.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestedBy: "alice"}); err != nil {
			t.Fatal(err)
		}
		kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			p, _, _ := unstructured.NestedString(a.Object, "status", "operationState", "phase")
			r, _, _ := unstructured.NestedString(a.Object, "status", "operationState", "syncResult", "revision")
			return p == phase && r == revision
		})
	}
	recorder := startRecorder(t, w, state)

	deploy(rev[0], "Succeeded") // history 0
	rev = append(rev, w.repo.Commit(t, "v1", cm("one")))
	deploy(rev[1], "Succeeded") // history 1
	bad := w.repo.Commit(t, "broken", map[string]string{"app/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  value: [1, 2]\n"})
	deploy(bad, "Failed") // no history entry; a failed record
	readDeployments(t, w, name, 3)
	recorder.stop()

	// Four syncs while the recorder is away; the history keeps two.
	for i, v := range []string{"two", "three", "four", "five"} {
		files := cm(v)
		if i == 0 {
			files["app/bad.yaml"] = "" // deleted
		}
		rev = append(rev, w.repo.Commit(t, fmt.Sprintf("v%d", i+2), files))
		deploy(rev[len(rev)-1], "Succeeded") // history 2..5
	}
	recorder = startRecorder(t, w, state)
	readDeployments(t, w, name, 6)
	// A sync of what is already deployed changes nothing: the record
	// says so, from the source the mark kept of history 5.
	if err := argo.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	readDeployments(t, w, name, 7) // history 6
	recorder.stop()

	if err := argo.Delete(ctx, ref, true); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitGone(t, func() error { _, err := apps.Get(ctx, name, metav1.GetOptions{}); return err })
	recorder = startRecorder(t, w, state)
	got := readDeployments(t, w, name, 8)
	recorder.stop()

	lines := slices.Collect(maps.Values(got))
	want := []string{
		"gap deleted_unobserved from 7 to ? after 6",
		"gap history_trimmed from 2 to 3 after 1",
		"record 0 Succeeded " + rev[0] + " after  by alice",
		"record 1 Succeeded " + rev[1] + " after " + rev[0] + " by alice",
		"record 4 Succeeded " + rev[4] + " after  by alice",
		"record 5 Succeeded " + rev[5] + " after " + rev[4] + " by alice",
		"record 6 Succeeded " + rev[5] + " after " + rev[5] + " by alice unchanged",
		"record failed Failed " + bad + " after " + rev[1] + " by alice",
	}
	slices.Sort(lines)
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("published:\n%v\nwant:\n%v", lines, want)
	}
}

// recorderRun is a Recorder and Watcher running until stop.
type recorderRun struct {
	cancel context.CancelFunc
	done   chan error
	t      *testing.T
}

func (r *recorderRun) stop() {
	r.t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		r.t.Fatal(err)
	}
}

func startRecorder(t *testing.T, w *world, marks spoke.MarkStore) *recorderRun {
	ctx, cancel := context.WithCancel(t.Context())
	rec, err := spoke.NewRecorder(w.cluster, w.pub, marks, spoke.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	watcher := newWatcher(t, w.dyn)
	r := &recorderRun{cancel: cancel, done: make(chan error, 1), t: t}
	go func() {
		err := make(chan error, 2)
		go func() { err <- rec.Run(ctx) }()
		go func() { err <- watcher.Run(ctx, rec.Observe) }()
		r.done <- errors.Join(<-err, <-err)
	}()
	t.Cleanup(cancel)
	return r
}

// readDeployments reads the deployments topic from the start until it holds
// n distinct event ids of Application app, and returns each as a line to
// compare. A second copy of an id must be identical to the first. The
// recorder sees every Application of the shared Argo CD namespace, those of
// other tests (and of earlier runs, under -count) too: their records are
// passed over.
func readDeployments(t *testing.T, w *world, app string, n int) map[string]string {
	t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(w.reg))
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, kgo.ConsumeTopics(w.topics[events.TopicDeployments]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	got := map[string]string{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("deployments topic holds %d distinct events, want %d: %v", len(got), n, got)
		}
		for _, r := range fs.Records() {
			d, err := dec.Decode(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			var line string
			switch p := d.Data.(type) {
			case *schemas.DeploymentRecorded:
				if p.Name != app {
					continue
				}
				id := "failed"
				if p.HistoryID != nil {
					id = fmt.Sprint(*p.HistoryID)
				}
				line = fmt.Sprintf("record %s %s %s after %s by %s", id, p.Phase, p.Revision, p.PreviousRevision, p.Initiator)
				if p.Unchanged {
					line += " unchanged"
				}
			case *schemas.DeploymentGap:
				if p.Name != app {
					continue
				}
				to := "?"
				if p.ToHistoryID != nil {
					to = fmt.Sprint(*p.ToHistoryID)
				}
				line = fmt.Sprintf("gap %s from %d to %s after %d", p.Reason, p.FromHistoryID, to, *p.LastRecorded)
			}
			if prev, dup := got[d.Event.ID()]; dup && prev != line {
				t.Errorf("event %s published twice with different data: %q, %q", d.Event.ID(), prev, line)
			}
			got[d.Event.ID()] = line
		}
	}
	return got
}
