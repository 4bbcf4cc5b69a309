package argocd_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/internal/argocd"
)

func TestDrift(t *testing.T) {
	desired := json.RawMessage(`{"destination":{"namespace":"web","server":"https://kubernetes.default.svc"},"project":"default",` +
		`"revisionHistoryLimit":3,"source":{"path":"app","repoURL":"https://git.example.com/r.git","targetRevision":"main"}}`)
	spec := func() map[string]any {
		return map[string]any{"project": "default", "revisionHistoryLimit": int64(3),
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web"},
			"source":      map[string]any{"repoURL": "https://git.example.com/r.git", "path": "app", "targetRevision": "main"}}
	}
	tests := []struct {
		name string
		edit func(spec map[string]any)
		want []string
	}{
		{"in line (an int64 equals a JSON number)", func(map[string]any) {}, nil},
		{"a changed field", func(s map[string]any) { s["source"].(map[string]any)["targetRevision"] = "HEAD" }, []string{"spec.source.targetRevision"}},
		{"an added and a removed field", func(s map[string]any) {
			s["syncPolicy"] = map[string]any{"automated": map[string]any{}}
			delete(s, "revisionHistoryLimit")
		}, []string{"spec.revisionHistoryLimit", "spec.syncPolicy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.edit(s)
			if diff := cmp.Diff(tc.want, argocd.Diff(desired, s)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if same := argocd.SpecHash(desired) == argocd.SpecHash(s); same != (tc.want == nil) {
				t.Errorf("equal hashes: %v, but the specs differ in %v", same, tc.want)
			}
		})
	}
	if argocd.SpecHash(json.RawMessage("{")) != "" {
		t.Error("a spec that is not JSON has a hash")
	}
	if got := argocd.Diff(json.RawMessage("{"), spec()); !cmp.Equal(got, []string{"spec"}) {
		t.Errorf("an unreadable desired spec differs in %v, want the whole spec", got)
	}
}
