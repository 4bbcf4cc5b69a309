package argocd_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/internal/argocd"
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
