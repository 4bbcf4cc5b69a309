package argocd

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSourceDigestSurvivesSlim: the informer keeps Applications slimmed,
// without the sources of their history, and the digest it keeps instead is
// the one the full object gives; different sources give different digests.
func TestSourceDigestSurvivesSlim(t *testing.T) {
	src := func(values string) map[string]any {
		return map[string]any{"repoURL": "https://git.example/web.git", "path": "web", "targetRevision": "main",
			"helm": map[string]any{"values": values}}
	}
	obj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web", "namespace": "argocd"},
			"status": map[string]any{
				"history": []any{
					map[string]any{"id": int64(0), "revision": "abc", "deployedAt": "2026-11-20T10:00:00Z", "source": src("replicas: 1")},
					map[string]any{"id": int64(1), "revision": "abc", "deployedAt": "2026-11-20T10:05:00Z", "source": src("replicas: 2")},
					map[string]any{"id": int64(2), "revision": "abc", "deployedAt": "2026-11-20T10:09:00Z", "source": src("replicas: 2")},
					map[string]any{"id": int64(3), "revision": "abc", "deployedAt": "2026-11-20T10:10:00Z"},
				},
				"operationState": map[string]any{"phase": "Failed", "startedAt": "2026-11-20T10:11:00Z", "finishedAt": "2026-11-20T10:12:00Z",
					"operation":  map[string]any{"sync": map[string]any{"revision": "def"}},
					"syncResult": map[string]any{"revision": "def", "source": src("replicas: 2")}},
			}}}
	}
	full := StatusOf(obj())
	slimmed, err := slim(obj())
	if err != nil {
		t.Fatal(err)
	}
	twice, err := slim(slimmed)
	if err != nil {
		t.Fatal(err)
	}
	kept := StatusOf(twice.(*unstructured.Unstructured))
	h, k := full.History, kept.History
	if len(h) != 4 || len(k) != 4 || full.LastSync == nil || kept.LastSync == nil {
		t.Fatalf("history %d and %d entries, last sync %v and %v", len(h), len(k), full.LastSync, kept.LastSync)
	}
	for i := range h {
		if h[i].Source != k[i].Source {
			t.Errorf("entry %d: digest %q from the full object, %q from the slimmed one", i, h[i].Source, k[i].Source)
		}
	}
	if h[0].Source == "" || h[0].Source == h[1].Source || h[1].Source != h[2].Source || h[3].Source != "" {
		t.Errorf("digests %q %q %q %q: want the first two to differ, the next two alike, the last empty",
			h[0].Source, h[1].Source, h[2].Source, h[3].Source)
	}
	if full.LastSync.Source != h[1].Source || kept.LastSync.Source != h[1].Source {
		t.Errorf("sync result digest %q, slimmed %q; want %q, its source's", full.LastSync.Source, kept.LastSync.Source, h[1].Source)
	}
}

// TestSlimKeepsTheResourcesList: the informer's slimmed Application gives
// the resources list (and counts) the full object gives, while what the
// list does not report of an entry is dropped.
func TestSlimKeepsTheResourcesList(t *testing.T) {
	obj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web", "namespace": "argocd"},
			"status": map[string]any{"resources": []any{
				map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web", "status": "OutOfSync",
					"health":   map[string]any{"status": "Degraded", "message": "crash loop", "lastTransitionTime": "2026-11-20T10:00:00Z"},
					"syncWave": int64(3), "requiresPruning": true, "hook": true, "requiresDeletionConfirmation": true},
			}}}}
	}
	full := StatusOf(obj())
	slimmed, err := slim(obj())
	if err != nil {
		t.Fatal(err)
	}
	if got := StatusOf(slimmed.(*unstructured.Unstructured)); !reflect.DeepEqual(got.Resources, full.Resources) || len(got.Resources.Items) != 1 {
		t.Errorf("resources from the slimmed Application %+v, from the full one %+v", got.Resources, full.Resources)
	}
	entry := slimmed.(*unstructured.Unstructured).Object["status"].(map[string]any)["resources"].([]any)[0].(map[string]any)
	if _, ok := entry["requiresDeletionConfirmation"]; ok {
		t.Errorf("the slimmed entry keeps what the list does not report: %v", entry)
	}
}
