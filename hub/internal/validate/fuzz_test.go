package validate

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/hub/api"
)

// golden returns the manifest of an object from a golden wire sample of
// its upserted event (events/testdata/golden), with and without the
// labels and annotations Argosy reserves.
func golden(f *testing.F, kind, file string) [][]byte {
	f.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "testdata", "golden", file))
	if err != nil {
		f.Fatal(err)
	}
	var rec struct{ Value string }
	var data struct {
		Namespace, Name     string
		Labels, Annotations map[string]string
		Spec                json.RawMessage
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rec.Value), &data); err != nil {
		f.Fatal(err)
	}
	manifest := func(labels, annotations map[string]string) []byte {
		m, err := json.Marshal(map[string]any{"apiVersion": APIVersion, "kind": kind,
			"metadata": map[string]any{"name": data.Name, "namespace": data.Namespace, "labels": labels, "annotations": annotations},
			"spec":     data.Spec})
		if err != nil {
			f.Fatal(err)
		}
		return m
	}
	unreserved := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		maps.DeleteFunc(out, func(k, _ string) bool { return strings.HasPrefix(k, ReservedPrefix) })
		return out
	}
	return [][]byte{manifest(data.Labels, data.Annotations), manifest(unreserved(data.Labels), unreserved(data.Annotations))}
}

// withinDepth reports whether spec, at a manifest's second level, keeps
// the manifest within api.MaxDepth.
func withinDepth(spec json.RawMessage) bool {
	return checkJSON([]byte(`{"spec":`+string(spec)+`}`)) == nil
}

// FuzzApplication checks that no manifest makes validation panic, that an
// accepted Application's spec is JSON within the nesting limit, and that
// the Application, written back as a manifest, validates to the same App.
func FuzzApplication(f *testing.F) {
	for _, m := range golden(f, "Application", "io.argosy.config.application.upserted.v1.json") {
		f.Add(m)
	}
	for _, m := range golden(f, "Application", "io.argosy.hub.placement.upserted.v1.json") {
		f.Add(m)
	}
	f.Add([]byte(goodApp))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"project":"p","sources":[{"repoURL":"x"}],"destination":{"name":"n"}}}`))
	f.Add([]byte(`kind: Application`))
	f.Add(nestedValues(api.MaxDepth - 4))
	f.Add(nestedValues(api.MaxDepth - 3))
	f.Add(nestedYAML(api.MaxDepth - 5))
	f.Add([]byte(strings.Replace(goodApp, "  name: guestbook\n", "  name: guestbook\n  name: other\n", 1)))
	f.Add([]byte(withMeta("{../x: web, team: "+strings.Repeat("v", 64)+"}", "{a b: x}")))
	f.Add([]byte(strings.Replace(goodApp, "https://github.com", "https://bot:pw@github.com", 1)))
	f.Add([]byte("spec:\n  a: |\n    [[[[\n  b: 'it''s'\n  c: - - x\n"))
	f.Fuzz(func(t *testing.T, m []byte) {
		app, err := Application(m, "argocd")
		if err != nil {
			return
		}
		if !json.Valid(app.Spec) || !withinDepth(app.Spec) {
			t.Fatalf("accepted %q with a spec %.200q not JSON within %d levels", m, app.Spec, api.MaxDepth)
		}
		back, err := json.Marshal(map[string]any{"apiVersion": APIVersion, "kind": "Application",
			"metadata": map[string]any{"name": app.Name, "namespace": app.Namespace, "labels": app.Labels, "annotations": app.Annotations},
			"spec":     app.Spec})
		if err != nil {
			t.Fatal(err)
		}
		again, err := Application(back, "argocd")
		if err != nil {
			t.Fatalf("accepted %q, then refused it written back: %v", m, err)
		}
		if diff := cmp.Diff(app, again); diff != "" {
			t.Errorf("round trip (-first +again):\n%s", diff)
		}
	})
}

// FuzzAppProject is FuzzApplication for AppProjects.
func FuzzAppProject(f *testing.F) {
	for _, m := range golden(f, "AppProject", "io.argosy.config.appproject.upserted.v1.json") {
		f.Add(m)
	}
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"web"},
		"spec":{"sourceRepos":["https://git.example/*","!https://git.example/secret"],"destinations":[{"server":"*","namespace":"web-*"}],
		"clusterResourceWhitelist":[{"group":"","kind":"Namespace"}]}}`))
	f.Add([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: p\n  labels: {team: web}\nspec:\n  sourceRepos: ['*']\n"))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},"spec":{"sourceRepos":["https://bot:pw@git.example/x.git"]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p","name":"q"},"spec":{}}`))
	f.Fuzz(func(t *testing.T, m []byte) {
		p, err := AppProject(m, "argocd")
		if err != nil {
			return
		}
		if !json.Valid(p.Spec) || !withinDepth(p.Spec) {
			t.Fatalf("accepted %q with a spec %.200q not JSON within %d levels", m, p.Spec, api.MaxDepth)
		}
		back, err := json.Marshal(map[string]any{"apiVersion": APIVersion, "kind": "AppProject",
			"metadata": map[string]any{"name": p.Name, "namespace": p.Namespace, "labels": p.Labels}, "spec": p.Spec})
		if err != nil {
			t.Fatal(err)
		}
		again, err := AppProject(back, "argocd")
		if err != nil {
			t.Fatalf("accepted %q, then refused it written back: %v", m, err)
		}
		if diff := cmp.Diff(p, again); diff != "" {
			t.Errorf("round trip (-first +again):\n%s", diff)
		}
	})
}
