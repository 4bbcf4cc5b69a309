//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// startGuard runs a Guard in mode over a watcher of the Argo CD namespace
// until the test ends.
func startGuard(t *testing.T, w *world, mode string, argo *argocd.Client) {
	ctx, cancel := context.WithCancel(t.Context())
	g, err := spoke.NewGuard(w.cluster, argo, w.state, w.pub, spoke.WithMode(mode), spoke.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { errs <- g.Run(ctx) }()
	go func() { errs <- newWatcher(t, w.dyn).Run(ctx, g.Observe) }()
	t.Cleanup(func() {
		cancel()
		if err := errors.Join(<-errs, <-errs); err != nil {
			t.Error(err)
		}
	})
}

// statusEvent reads the status topic from the start until ok accepts an
// event's data, and returns that data.
func statusEvent[T any](t *testing.T, w *world, ok func(*T) bool) *T {
	t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(w.reg))
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, kgo.ConsumeTopics(w.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var zero T
			t.Fatalf("no %T event as wanted on the status topic", zero)
		}
		for _, r := range fs.Records() {
			d, err := dec.Decode(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if p, is := d.Data.(*T); is && ok(p) {
				return p
			}
		}
	}
}

// TestManagedModeRevertsDrift edits an Argosy-managed Application in the
// cluster, as kubectl edit would, and checks that the spoke puts the desired
// spec back, removes the field the edit added, and reports both fields and
// the config event it restored. The same edit strips Argosy's label and
// annotations from the object: the protection lives in the spoke's state,
// so that does not switch it off.
func TestManagedModeRevertsDrift(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	ctx, cancel := context.WithCancel(t.Context())
	done := w.run(ctx, "spoke."+w.cluster)
	up := w.app(1)
	recs := w.publish(w.hub, up)
	w.acks(func(last map[string]string, _ int) bool { return last[up.ID()] == "applied" })
	startGuard(t, w, spoke.ModeManaged, w.argo)

	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "guestbook-" + w.ns
	var want map[string]any
	// Argo CD's controller writes the Application too: edit the latest.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		a, err := apps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want, _, _ = unstructured.NestedMap(a.Object, "spec")
		if err := unstructured.SetNestedField(a.Object, "HEAD", "spec", "source", "targetRevision"); err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(a.Object, map[string]any{"prune": true}, "spec", "syncPolicy", "automated"); err != nil {
			return err
		}
		a.SetAnnotations(nil)
		labels := a.GetLabels()
		delete(labels, argocd.LabelManaged)
		a.SetLabels(labels)
		_, err = apps.Update(ctx, a, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitApplication(t, apps, name, func(u *unstructured.Unstructured) bool {
		got, _, _ := unstructured.NestedMap(u.Object, "spec")
		b1, _ := json.Marshal(got)
		b2, _ := json.Marshal(want)
		return string(b1) == string(b2)
	})
	d := statusEvent(t, w, func(d *schemas.DriftReverted) bool { return d.Name == name })
	if !slices.Equal(d.Fields, []string{"spec.source.targetRevision", "spec.syncPolicy"}) || d.ConfigOffset != recs[0].Offset ||
		d.Kind != spoke.KindApplication || d.Generation != 1 {
		t.Errorf("drift report %+v, want both fields and config offset %d", d, recs[0].Offset)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAutonomousMode creates an Application in the cluster and checks that
// an autonomous spoke publishes it, refuses the hub's attempts to overwrite
// or delete it (acknowledged as conflicts), and still applies the hub's own
// Applications. Then the hub adopts it: the spoke takes the same object
// over in place (same uid), and the hub's next change applies to it.
func TestAutonomousMode(t *testing.T) {
	w := newWorld(t)
	argo := newArgo(t, w.dyn, argocd.KeepLocal())
	w.argo = argo
	ctx, cancel := context.WithCancel(t.Context())
	done := w.run(ctx, "spoke."+w.cluster)
	startGuard(t, w, spoke.ModeAutonomous, argo)

	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "guestbook-" + w.ns // the name w.app uses
	spec := map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "local", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}}
	local := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"team": "edge"}}, "spec": spec}}
	if _, err := apps.Create(ctx, local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := statusEvent(t, w, func(p *schemas.ApplicationPublished) bool { return p.Name == name })
	var gotSpec map[string]any
	if err := json.Unmarshal(p.Spec, &gotSpec); err != nil {
		t.Fatal(err)
	}
	if p.Labels["team"] != "edge" || p.Project != "default" || gotSpec["source"].(map[string]any)["path"] != "local" || p.Generation < 1 {
		t.Errorf("published %+v", p)
	}

	over := w.app(1)
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 2}
	del := w.event(events.TypeApplicationDeleted, res, schemas.ApplicationDeleted{Resource: res})
	ownRes := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: "hub-" + w.ns, Generation: 1}
	own := w.event(events.TypeApplicationUpserted, ownRes, schemas.ApplicationUpserted{Resource: ownRes, Project: "default",
		Spec: json.RawMessage(`{"project":"default","source":{"repoURL":"` + w.repo.URL + `","path":"app"},` +
			`"destination":{"server":"https://kubernetes.default.svc","namespace":"` + w.ns + `"}}`)})
	w.publish(w.hub, over, del, own)
	got := w.acks(func(last map[string]string, n int) bool { return n >= 3 })
	if got[over.ID()] != schemas.RejectConflict || got[del.ID()] != schemas.RejectConflict || got[own.ID()] != "applied" {
		t.Errorf("acknowledgements %v: want the local Application's update and delete refused as conflicts, the hub's own applied", got)
	}
	a, err := apps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the local Application is gone: %v", err)
	}
	if path, _, _ := unstructured.NestedString(a.Object, "spec", "source", "path"); path != "local" {
		t.Errorf("the local Application was overwritten: path %q", path)
	}

	// The hub adopts it with the spec it published: the spoke takes it
	// over in place, and from then on the hub's changes apply to it.
	res.Generation = 3
	adopt := w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: p.Project, Labels: p.Labels,
		Spec: p.Spec, Adopt: true})
	res.Generation = 4
	change := w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: "default", Labels: p.Labels,
		Spec: json.RawMessage(`{"project":"default","source":{"repoURL":"` + w.repo.URL + `","path":"app","targetRevision":"main"},` +
			`"destination":{"server":"https://kubernetes.default.svc","namespace":"` + w.ns + `"}}`)})
	w.publish(w.hub, adopt, change)
	got = w.acks(func(last map[string]string, n int) bool { return n >= 5 })
	if got[adopt.ID()] != "applied" || got[change.ID()] != "applied" {
		t.Errorf("acknowledgements %v: want the adoption and the change after it applied", got)
	}
	b, err := apps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the adopted Application is gone: %v", err)
	}
	if b.GetUID() != a.GetUID() || b.GetCreationTimestamp() != a.GetCreationTimestamp() {
		t.Errorf("the Application was re-created: uid %s, was %s", b.GetUID(), a.GetUID())
	}
	if b.GetLabels()[argocd.LabelManaged] != "true" || b.GetLabels()["team"] != "edge" || b.GetAnnotations()[argocd.AnnotationGeneration] != "4" {
		t.Errorf("adopted Application: labels %v, annotations %v; want it managed at generation 4, its labels kept", b.GetLabels(), b.GetAnnotations())
	}
	if path, _, _ := unstructured.NestedString(b.Object, "spec", "source", "path"); path != "app" {
		t.Errorf("the hub's change after adoption was not applied: path %q", path)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
