//go:build integration

package spoke_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
)

// appWith is generation 1 of Application name in project, from repoURL,
// to namespace ns of the cluster Argo CD runs in.
func (w *world) appWith(name, project, repoURL, ns string) *event.Event {
	spec, _ := json.Marshal(map[string]any{"project": project,
		"source":      map[string]any{"repoURL": repoURL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}})
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	return w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: project, Spec: spec})
}

// TestApplicationRefusedByItsProject sends Applications that Argo CD would
// never run: one in an AppProject that does not exist, one to a namespace
// its project does not permit, one from a repository its project does not
// permit. Each is rejected as apply_failed with a reason naming the field
// and the project, and no Application is created for it. An Application
// the project permits, sent with them, is applied, and Argo CD takes it.
func TestApplicationRefusedByItsProject(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	project := "team-" + w.ns
	spec, _ := json.Marshal(map[string]any{"sourceRepos": []string{w.repo.URL},
		"destinations": []any{map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}}})
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: project, Generation: 1}
	projUp := w.event(events.TypeAppProjectUpserted, res, schemas.AppProjectUpserted{Resource: res, Spec: spec})

	missing := w.appWith("missing-"+w.ns, "nosuch-"+w.ns, w.repo.URL, w.ns)
	elsewhere := w.appWith("elsewhere-"+w.ns, project, w.repo.URL, "other-"+w.ns)
	foreign := w.appWith("foreign-"+w.ns, project, "https://git.example/other.git", w.ns)
	permitted := w.appWith("permitted-"+w.ns, project, w.repo.URL, w.ns)
	got := w.applyAllWithin(time.Minute, projUp, missing, elsewhere, foreign, permitted)

	refused := []struct {
		e     *event.Event
		name  string
		names []string // what the reason must name
	}{
		{missing, "missing-" + w.ns, []string{"spec.project", `"nosuch-` + w.ns + `"`, "not found"}},
		{elsewhere, "elsewhere-" + w.ns, []string{"spec.destination", `"other-` + w.ns + `"`, `"` + project + `"`}},
		{foreign, "foreign-" + w.ns, []string{"spec.source.repoURL", "https://git.example/other.git", `"` + project + `"`}},
	}
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	for _, r := range refused {
		reason := w.reason(r.e.ID())
		t.Logf("%s: %s", r.name, reason)
		if got[r.e.ID()] != schemas.RejectApplyFailed {
			t.Errorf("%s: acknowledged %q (%s), want %q", r.name, got[r.e.ID()], reason, schemas.RejectApplyFailed)
		}
		for _, s := range r.names {
			if !strings.Contains(reason, s) {
				t.Errorf("%s: the rejection says %q, want it to name %s", r.name, reason, s)
			}
		}
		if _, err := apps.Get(t.Context(), r.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the refused Application was written to the cluster (%v)", r.name, err)
		}
	}
	if got[projUp.ID()] != "applied" || got[permitted.ID()] != "applied" {
		t.Fatalf("the AppProject and the permitted Application: %q and %q, want both applied", got[projUp.ID()], got[permitted.ID()])
	}
	// Argo CD takes the permitted one: it compares it, with no spec error.
	kubetest.WaitApplication(t, apps, "permitted-"+w.ns, func(u *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "InvalidSpecError" {
				t.Fatalf("Argo CD refused the permitted Application: %v", m["message"])
			}
		}
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		return sync == "OutOfSync" || sync == "Synced"
	})
}
