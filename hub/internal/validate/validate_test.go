package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const goodApp = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  labels: {team: web}
spec:
  project: web
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    targetRevision: HEAD
    path: guestbook
    helm:
      valueFiles: [values.yaml]
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    retry:
      limit: 3
      backoff: {duration: 5s, factor: 2}
`

func TestApplicationAccepts(t *testing.T) {
	for name, m := range map[string]string{
		"single source with helm": goodApp,
		"multi-source": `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","namespace":"apps"},
			"spec":{"project":"default","sources":[{"repoURL":"https://charts.example","chart":"x","targetRevision":"1.2.3"},
			{"repoURL":"https://git.example/v.git","ref":"values"}],"destination":{"name":"in-cluster","namespace":"a"}}}`,
		"kustomize": `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"k"},
			"spec":{"project":"default","source":{"repoURL":"https://git.example/k.git","path":"overlays/prod","kustomize":{"namePrefix":"p-","images":["nginx:1.27"]}},
			"destination":{"server":"https://kubernetes.default.svc","namespace":"k"}}}`,
		"int-or-string replicas, a string": strings.Replace(goodApp, "    helm:\n      valueFiles: [values.yaml]\n", "    kustomize:\n      replicas: [{name: web, count: \"3\"}]\n", 1),
		"int-or-string replicas, a number": strings.Replace(goodApp, "    helm:\n      valueFiles: [values.yaml]\n", "    kustomize:\n      replicas: [{name: web, count: 3}]\n", 1),
	} {
		t.Run(name, func(t *testing.T) {
			app, err := Application([]byte(m), "argocd")
			if err != nil {
				t.Fatal(err)
			}
			if app.Name == "" || app.Project == "" || len(app.Spec) == 0 || app.Namespace == "" {
				t.Errorf("app %+v", app)
			}
		})
	}
	app, err := Application([]byte(goodApp), "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if app.Namespace != "argocd" || app.Labels["team"] != "web" || !json.Valid(app.Spec) || bytes.ContainsAny(app.Spec, "\n ") {
		t.Errorf("app %+v, spec %s: want the default namespace, the labels and compact JSON", app, app.Spec)
	}
}

func TestApplicationRefuses(t *testing.T) {
	repl := func(old, new string) string { return strings.Replace(goodApp, old, new, 1) }
	tests := []struct {
		name, manifest, field string
	}{
		{"not YAML", "{", "(manifest)"},
		{"a list", "[]", "(manifest)"},
		{"wrong apiVersion", repl("argoproj.io/v1alpha1", "argoproj.io/v1"), "apiVersion"},
		{"wrong kind", repl("kind: Application", "kind: AppProject"), "kind"},
		{"unknown top-level field", goodApp + "extra: 1\n", "extra"},
		{"status", goodApp + "status: {}\n", "status"},
		{"operation", goodApp + "operation: {sync: {}}\n", "operation"},
		{"unknown spec field", repl("  project: web", "  project: web\n  projet: web"), "spec.projet"},
		{"unknown nested field", repl("    path: guestbook", "    path: guestbook\n    pathh: x"), "spec.source.pathh"},
		{"wrong type", repl("path: guestbook", "path: [guestbook]"), "spec.source.path"},
		{"int-or-string given a list", repl("    helm:\n      valueFiles: [values.yaml]\n", "    kustomize:\n      replicas: [{name: web, count: [3]}]\n"), "spec.source.kustomize.replicas[0].count"},
		{"no name", repl("  name: guestbook\n", ""), "metadata.name"},
		{"bad name", repl("name: guestbook", "name: Guest_Book"), "metadata.name"},
		{"bad namespace", repl("  name: guestbook\n", "  name: guestbook\n  namespace: Apps\n"), "metadata.namespace"},
		{"server-set field", repl("  name: guestbook\n", "  name: guestbook\n  resourceVersion: \"12\"\n"), "metadata.resourceVersion"},
		{"finalizers", repl("  name: guestbook\n", "  name: guestbook\n  finalizers: [resources-finalizer.argocd.argoproj.io]\n"), "metadata.finalizers"},
		{"an Argosy annotation", repl("  name: guestbook\n", "  name: guestbook\n  annotations: {argosy.dev/commit-time: \"2020-01-01T00:00:00Z\", team: web}\n"),
			"metadata.annotations[argosy.dev/commit-time]"},
		{"an Argosy label", repl("  labels: {team: web}\n", "  labels: {team: web, argosy.dev/placement: other}\n"), "metadata.labels[argosy.dev/placement]"},
		{"no project", repl("  project: web\n", ""), "spec.project"},
		{"no source", repl("  source:\n    repoURL", "  notsource:\n    repoURL"), "spec.notsource"},
		{"no repoURL", repl("    repoURL: https://github.com/argoproj/argocd-example-apps.git\n", ""), "spec.source.repoURL"},
		{"no destination", repl("    server: https://kubernetes.default.svc\n", ""), "spec.destination"},
		{"server and name", repl("    server: https://kubernetes.default.svc\n", "    server: https://kubernetes.default.svc\n    name: x\n"), "spec.destination"},
		{"no spec", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\n", "spec"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Application([]byte(tc.manifest), "argocd")
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok {
				t.Fatalf("error %v (%T), want an *Error", err, err)
			}
			for _, f := range ve.Fields {
				if f.Field == tc.field {
					return
				}
			}
			t.Errorf("fields %+v, want %q named", ve.Fields, tc.field)
		})
	}
}

func TestAppProject(t *testing.T) {
	p, err := AppProject([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"web"},
		"spec":{"sourceRepos":["https://git.example/*"],"destinations":[{"server":"*","namespace":"web-*"}],
		"clusterResourceWhitelist":[{"group":"","kind":"Namespace"}]}}`), "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web" || p.Namespace != "argocd" {
		t.Errorf("project %+v", p)
	}
	_, err = AppProject([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"web"},"spec":{"sourceRepo":["*"]}}`), "argocd")
	if ve, ok := err.(*Error); !ok || ve.Fields[0].Field != "spec.sourceRepo" { //nolint:errorlint // returned unwrapped
		t.Errorf("misspelt field: %v", err)
	}
}

func TestPermitted(t *testing.T) {
	app := func(repo, server, name, ns string) *App {
		spec, _ := json.Marshal(map[string]any{"project": "p", "source": map[string]any{"repoURL": repo},
			"destination": map[string]any{"server": server, "name": name, "namespace": ns}})
		return &App{Name: "a", Project: "p", Spec: spec}
	}
	project := json.RawMessage(`{"sourceRepos":["https://git.example/team/*","!https://git.example/team/secret"],
		"destinations":[{"server":"https://kubernetes.default.svc","namespace":"web-*"},{"name":"edge-*","namespace":"*"},{"server":"*","namespace":"!kube-system"}]}`)
	tests := []struct {
		name  string
		app   *App
		field string // "" when permitted
	}{
		{"permitted", app("https://git.example/team/web.git", "https://kubernetes.default.svc", "", "web-1"), ""},
		// A deny entry alone admits what it does not deny, as in Argo CD.
		{"repository not denied", app("https://evil.example/x.git", "https://kubernetes.default.svc", "", "web-1"), ""},
		{"repository denied", app("https://git.example/team/secret", "https://kubernetes.default.svc", "", "web-1"), "spec.source.repoURL"},
		{"destination by name", app("https://git.example/team/web.git", "", "edge-7", "anything"), ""},
		{"namespace denied", app("https://git.example/team/web.git", "https://other", "", "kube-system"), "spec.destination"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Permitted(tc.app, project)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ve, ok := err.(*Error) //nolint:errorlint // returned unwrapped
			if !ok || ve.Fields[0].Field != tc.field {
				t.Errorf("Permitted = %v, want %s named", err, tc.field)
			}
		})
	}
	allowList := json.RawMessage(`{"sourceRepos":["https://git.example/team/*"],"destinations":[{"server":"*","namespace":"*"}]}`)
	err := Permitted(app("https://evil.example/x.git", "https://a", "", "b"), allowList)
	if ve, ok := err.(*Error); !ok || ve.Fields[0].Field != "spec.source.repoURL" { //nolint:errorlint // returned unwrapped
		t.Errorf("a repository the project does not list: %v", err)
	}
	scoped := json.RawMessage(`{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}],"permitOnlyProjectScopedClusters":true}`)
	if err := Permitted(app("https://git.example/x", "https://a", "", "b"), scoped); err != nil {
		t.Errorf("a project scoped to its own clusters cannot be judged here, and is left to Argo CD: %v", err)
	}
}

// TestCRDsAreArgoCDs holds the embedded CRDs equal to the module's, so the
// schema checked is the pinned Argo CD's (go generate ./hub/... copies
// them again).
func TestCRDsAreArgoCDs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v2").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "manifests", "crds")
	for file, embedded := range map[string][]byte{"application-crd.yaml": applicationCRD, "appproject-crd.yaml": appProjectCRD} {
		want, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, embedded) {
			t.Errorf("crds/%s differs from Argo CD's: run go generate ./hub/...", file)
		}
	}
}

func BenchmarkApplication(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Application([]byte(goodApp), "argocd"); err != nil {
			b.Fatal(err)
		}
	}
}
