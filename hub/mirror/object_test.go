package mirror

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

func testApp(ns, name string) read.App {
	const cluster = "east"
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	key := projector.AppKey{Cluster: cluster, Namespace: ns, Name: name}
	return read.App{AppRow: projector.AppRow{AppKey: key,
		Desired: &projector.AppDesired{AppKey: key, Project: "team", Generation: 3, Labels: map[string]string{"tier": "web"},
			Spec: json.RawMessage(`{"source":{"repoURL":"https://git.example/app","path":"app"},"destination":{"server":"https://kubernetes.default.svc"}}`)},
		Observed: &projector.AppObserved{AppKey: key, Sync: &schemas.SyncStatus{Status: "Synced", Revision: "abc"},
			Health:     &schemas.HealthStatus{Status: "Degraded", Message: "crash"},
			Operation:  &schemas.OperationState{Phase: "Succeeded", StartedAt: at, FinishedAt: &at},
			Conditions: []schemas.Condition{{Type: "SyncError"}}, UpdatedAt: at,
			Resources: &schemas.ResourceSummary{Total: 2, Items: []schemas.ResourceStatus{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web", Status: "OutOfSync",
					Health: &schemas.HealthStatus{Status: "Progressing"}, SyncWave: 2, RequiresPruning: true},
				{Version: "v1", Kind: "Service", Namespace: "web", Name: "web", Hook: true}}}},
	}}
}

func TestApplicationCarriesSpecStatusAndMarks(t *testing.T) {
	app := testApp("argocd", "web")
	var history []projector.Deployment
	for i := range int64(12) {
		id := i
		history = append(history, projector.Deployment{DeploymentRecorded: schemas.DeploymentRecorded{Resource: schemas.Resource{Cluster: "east", Namespace: "argocd", Name: "web"},
			Revision: "r" + string(rune('a'+i)), HistoryID: &id, Initiator: "alice",
			StartedAt: time.Unix(1000*i, 0), FinishedAt: time.Unix(1000*i+5, 0)}})
	}
	history = append(history, projector.Deployment{DeploymentRecorded: schemas.DeploymentRecorded{Revision: "failed"}})
	obj, ok, err := application("fleet-east", app, history)
	if err != nil || !ok {
		t.Fatalf("application: %v %v", ok, err)
	}
	for path, want := range map[string]string{
		"spec.project":                "team",
		"status.sync.status":          "Synced",
		"status.sync.revision":        "abc",
		"status.health.status":        "Degraded",
		"status.operationState.phase": "Succeeded",
		"metadata.namespace":          "fleet-east",
		"metadata.labels.tier":        "web",
	} {
		if got := field(obj, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	a := obj.GetAnnotations()
	if a[AnnotationSkipReconcile] != "true" || a[AnnotationOwner] != OwnerHub || a[AnnotationNamespace] != "argocd" || a[AnnotationGeneration] != "3" || a[AnnotationHash] == "" {
		t.Errorf("annotations %v", a)
	}
	// The relay's label is the webhook's, never written from the hub's
	// copy: a label someone applied through the hub would otherwise mark
	// a sync for the Relay, in the mirror's own name.
	app.Desired.Labels = map[string]string{"tier": "web", LabelRelay: relayPending, LabelCluster: "west"}
	obj, _, err = application("fleet-east", app, history)
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.GetLabels(); l[LabelCluster] != "east" || l[LabelManagedBy] != FieldManager || l[LabelRelay] != "" || l["tier"] != "web" {
		t.Errorf("labels %v", l)
	}
	h, _, _ := unstructured.NestedSlice(obj.Object, "status", "history")
	if len(h) != historyLimit {
		t.Fatalf("history has %d entries, want the last %d with an id", len(h), historyLimit)
	}
	if last := h[len(h)-1].(map[string]any); last["id"] != int64(11) || last["revision"] != "rl" {
		t.Errorf("last history entry %v, want id 11 at rl", last)
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if len(conds) != 1 || conds[0].(map[string]any)["message"] == "" {
		t.Errorf("conditions %v: Argo CD requires a message", conds)
	}
	res, _, _ := unstructured.NestedSlice(obj.Object, "status", "resources")
	wantRes := []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web",
		"status": "OutOfSync", "health": map[string]any{"status": "Progressing"}, "syncWave": int64(2), "requiresPruning": true},
		map[string]any{"version": "v1", "kind": "Service", "namespace": "web", "name": "web", "hook": true}}
	if diff := cmp.Diff(wantRes, res); diff != "" {
		t.Errorf("status.resources (-want +got):\n%s", diff)
	}
	if _, ok, _ := unstructured.NestedMap(obj.Object, "status", "operationState", "operation"); !ok {
		t.Error("operationState has no operation, which Argo CD's schema requires")
	}

	again, _, _ := application("fleet-east", app, history)
	if again.GetAnnotations()[AnnotationHash] != a[AnnotationHash] {
		t.Error("the same row hashes differently")
	}
	app.Observed.Health.Status = "Healthy"
	changed, _, _ := application("fleet-east", app, history)
	if changed.GetAnnotations()[AnnotationHash] == a[AnnotationHash] {
		t.Error("a changed status keeps the hash, so it would never be written")
	}
}

func TestSpokeOwnedAndDeleted(t *testing.T) {
	app := testApp("argocd", "local")
	app.Desired = nil
	app.Observed.Local = &projector.LocalApp{Project: "default", Spec: json.RawMessage(`{"source":{"repoURL":"x"}}`), Generation: 7}
	obj, ok, err := application("east", app, nil)
	if err != nil || !ok {
		t.Fatalf("application: %v %v", ok, err)
	}
	if a := obj.GetAnnotations(); a[AnnotationOwner] != OwnerSpoke || a[AnnotationGeneration] != "7" {
		t.Errorf("a spoke-owned Application's annotations %v", a)
	}
	if field(obj, "spec.project") != "default" {
		t.Errorf("spec.project %q", field(obj, "spec.project"))
	}

	gone := testApp("argocd", "gone")
	gone.Desired.Deleted = true
	gone.Observed.Deleted = true
	if _, ok, _ := application("east", gone, nil); ok {
		t.Error("a deleted Application is mirrored")
	}
	bad := testApp("argocd", "bad")
	bad.Desired.Spec = json.RawMessage(`[`)
	if _, _, err := application("east", bad, nil); err == nil {
		t.Error("a spec that is not JSON gives no error")
	}
}

func TestOneNameInTwoNamespaces(t *testing.T) {
	apps := []read.App{testApp("team-b", "web"), testApp("argocd", "web"), testApp("argocd", "api")}
	want, conflicts, err := objects("east", apps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 || len(want) != 2 {
		t.Fatalf("%d objects, %d conflicts; want 2 and 1", len(want), conflicts)
	}
	if ns := want["web"].GetAnnotations()[AnnotationNamespace]; ns != "argocd" {
		t.Errorf("web mirrors the one in %s, want the first namespace in order, argocd", ns)
	}
}

// field reads a dotted path of strings.
func field(obj *unstructured.Unstructured, path string) string {
	s, _, _ := unstructured.NestedString(obj.Object, strings.Split(path, ".")...)
	return s
}
