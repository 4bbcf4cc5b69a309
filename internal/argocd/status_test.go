package argocd_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// TestStatusOfLocalAndCommit: an Application without Argosy's label is
// the cluster's own (Local, which autonomous mode publishes); once Argosy
// manages it (after an adoption, say) it is not, and what it reports is
// what the hub's change annotated: its generation and source commit.
func TestStatusOfLocalAndCommit(t *testing.T) {
	app := func(labels, annotations map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web", "namespace": "argocd", "labels": labels, "annotations": annotations},
			"spec":     map[string]any{"project": "default"}}}
	}
	if s := argocd.StatusOf(app(map[string]any{"team": "edge"}, nil)); s.Local == nil || s.Local.Project != "default" {
		t.Errorf("the cluster's own Application: Local %+v, want it", s.Local)
	}
	s := argocd.StatusOf(app(map[string]any{argocd.LabelManaged: "true"}, map[string]any{argocd.AnnotationGeneration: "3",
		argocd.AnnotationCommitRevision: "abc", argocd.AnnotationCommitTime: "2026-11-20T10:04:05.5Z"}))
	if s.Local != nil {
		t.Errorf("a managed Application is published as the cluster's own: %+v", s.Local)
	}
	if want := time.Date(2026, 11, 20, 10, 4, 5, 5e8, time.UTC); s.Generation != 3 || s.CommitRevision != "abc" || !s.CommitTime.Equal(want) {
		t.Errorf("generation %d, commit %s at %s; want 3, abc at %s", s.Generation, s.CommitRevision, s.CommitTime, want)
	}
}

// TestStatusListsResources: status.resources is counted whole and listed
// in Argo CD's order, each entry as Argo CD has it, while the list fits
// its bounds: past 500 entries, or 64 KiB of them, it stops, so that it
// holds a prefix and Total says how many there are; an entry with no
// kind or name is counted and not listed.
func TestStatusListsResources(t *testing.T) {
	app := func(res []any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web", "namespace": "argocd"}, "status": map[string]any{"resources": res}}}
	}
	s := argocd.StatusOf(app([]any{
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web", "status": "OutOfSync",
			"health": map[string]any{"status": "Progressing", "message": "1 of 2 updated"}, "syncWave": int64(-1), "requiresPruning": true},
		map[string]any{"version": "v1", "kind": "Service", "namespace": "web", "name": "web", "status": "Synced", "hook": true},
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "web"},
	}))
	want := &schemas.ResourceSummary{Total: 3, ByKind: map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": 1},
		ByHealth: map[string]int{"Progressing": 1}, Items: []schemas.ResourceStatus{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web", Status: "OutOfSync",
				Health: &schemas.HealthStatus{Status: "Progressing", Message: "1 of 2 updated"}, SyncWave: -1, RequiresPruning: true},
			{Version: "v1", Kind: "Service", Namespace: "web", Name: "web", Status: "Synced", Hook: true}}}
	if diff := cmp.Diff(want, s.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	many := make([]any, 600)
	for i := range many {
		many[i] = map[string]any{"version": "v1", "kind": "ConfigMap", "name": fmt.Sprintf("cm-%03d", i)}
	}
	if r := argocd.StatusOf(app(many)).Resources; r.Total != 600 || len(r.Items) != schemas.MaxResourceItems || r.Items[499].Name != "cm-499" {
		t.Errorf("600 resources: total %d, %d listed; want 600 and the first %d", r.Total, len(r.Items), schemas.MaxResourceItems)
	}
	long := make([]any, 100)
	for i := range long {
		long[i] = map[string]any{"version": "v1", "kind": "Pod", "name": fmt.Sprintf("p-%02d", i),
			"health": map[string]any{"status": "Degraded", "message": strings.Repeat("x", 2000)}}
	}
	r := argocd.StatusOf(app(long)).Resources
	b, _ := json.Marshal(r.Items)
	if r.Total != 100 || len(r.Items) == 0 || len(r.Items) >= 100 || len(b) > schemas.MaxResourceItemsBytes+len(r.Items)+2 || r.Items[0].Name != "p-00" {
		t.Errorf("100 resources of 2 KB each: %d listed in %d bytes; want the first ones, within %d bytes", len(r.Items), len(b), schemas.MaxResourceItemsBytes)
	}
}
