package argocd_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/internal/argocd"
)

func TestDrift(t *testing.T) {
	desired := `{"destination":{"namespace":"web","server":"https://kubernetes.default.svc"},"project":"default",` +
		`"revisionHistoryLimit":3,"source":{"path":"app","repoURL":"https://git.example.com/r.git","targetRevision":"main"}}`
	spec := func() map[string]any {
		return map[string]any{"project": "default", "revisionHistoryLimit": int64(3),
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web"},
			"source":      map[string]any{"repoURL": "https://git.example.com/r.git", "path": "app", "targetRevision": "main"}}
	}
	tests := []struct {
		name        string
		annotations map[string]any
		edit        func(spec map[string]any)
		want        []string
	}{
		{"not managed", nil, func(s map[string]any) { s["project"] = "other" }, nil},
		{"in line (an int64 equals a JSON number)", map[string]any{argocd.AnnotationDesiredSpec: desired}, func(map[string]any) {}, nil},
		{"a changed field", map[string]any{argocd.AnnotationDesiredSpec: desired},
			func(s map[string]any) { s["source"].(map[string]any)["targetRevision"] = "HEAD" }, []string{"spec.source.targetRevision"}},
		{"an added and a removed field", map[string]any{argocd.AnnotationDesiredSpec: desired}, func(s map[string]any) {
			s["syncPolicy"] = map[string]any{"automated": map[string]any{}}
			delete(s, "revisionHistoryLimit")
		}, []string{"spec.revisionHistoryLimit", "spec.syncPolicy"}},
		{"an unreadable annotation is not managed", map[string]any{argocd.AnnotationDesiredSpec: "{"}, func(s map[string]any) { s["project"] = "x" }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.edit(s)
			meta := map[string]any{"name": "web"}
			if tc.annotations != nil {
				meta["annotations"] = tc.annotations
			}
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": meta, "spec": s}}
			if diff := cmp.Diff(tc.want, argocd.Drift(u)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
