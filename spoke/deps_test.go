package spoke_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSpokeBinaryDoesNotLinkArgoCD keeps the agent small: importing Argo CD's
// types alone costs 1,211 packages and 85 MB of RSS at start-up, and
// client-go's dynamicinformer (which links every typed informer) took the
// spoke from 46 to 72 MB of binary and 39 to 53 MiB of RSS. spoke/live,
// which the agent is to answer live questions with, is held to the same.
func TestSpokeBinaryDoesNotLinkArgoCD(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/argosyproj/argosy/cmd/argosy-spoke",
		"github.com/argosyproj/argosy/spoke/live").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	// Argo CD's module, and client-go's typed clientset and informers
	// (with every Kubernetes API group), which the dynamic client does not
	// need: together they would double the binary and its memory.
	banned := []string{"github.com/argoproj/argo-cd", "k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/api/"}
	for _, d := range deps {
		for _, b := range banned {
			if strings.HasPrefix(d, b) {
				t.Errorf("argosy-spoke or spoke/live links %s", d)
			}
		}
	}
}

// TestLibrariesReadNoEnvironmentAndSetNoGlobals holds what lets many agents
// share a process (docs/design.md): no library package reads an
// environment variable or installs a global OpenTelemetry provider or
// propagator. Only cmd, and the plumbing it alone uses (internal/kafkaconn,
// internal/telemetry), may.
func TestLibrariesReadNoEnvironmentAndSetNoGlobals(t *testing.T) {
	libs := []string{"github.com/argosyproj/argosy/events/...", "github.com/argosyproj/argosy/schemas/...",
		"github.com/argosyproj/argosy/projector/...", "github.com/argosyproj/argosy/spoke/...",
		"github.com/argosyproj/argosy/internal/argocd/...", "github.com/argosyproj/argosy/internal/httpserve/...",
		"github.com/argosyproj/argosy/system/..."}
	out, err := exec.Command("go", append([]string{"list", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}`}, libs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	files := strings.Fields(string(out))
	if len(files) < 20 {
		t.Fatalf("go list found %d library files; want them all", len(files))
	}
	banned := map[string]map[string]bool{
		"os":                       {"Getenv": true, "LookupEnv": true, "Environ": true, "Setenv": true},
		"go.opentelemetry.io/otel": {"SetTracerProvider": true, "SetMeterProvider": true, "SetTextMapPropagator": true},
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{} // local name -> banned import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if _, ok := banned[p]; ok {
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = p
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && banned[names[x.Name]][sel.Sel.Name] {
				t.Errorf("%s: %s.%s in a library", fset.Position(sel.Pos()), names[x.Name], sel.Sel.Name)
			}
			return true
		})
	}
}

// TestIntegrationFilesAreNamed holds the one naming of the files whose
// tests need a real server (docs/design.md, Test broker): a file with the
// integration build tag ends in _kube_test.go, _kafka_test.go,
// _postgres_test.go or _build_test.go, and a file so named carries the tag,
// so that its name says what running it takes. A file may need a tag of
// its own besides (integration && argocdui: a build of Argo CD's UI),
// which make test does not set.
func TestIntegrationFilesAreNamed(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/argosyproj/argosy/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	suffixes := []string{"_kube_test.go", "_kafka_test.go", "_postgres_test.go", "_build_test.go"}
	seen := 0
	for _, dir := range strings.Fields(string(out)) {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tagged := strings.HasPrefix(string(src), "//go:build integration\n") || strings.HasPrefix(string(src), "//go:build integration && ")
			named := slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(f, s) })
			switch {
			case tagged && !named:
				t.Errorf("%s carries the integration tag: name it …%s after the real server its tests need", f, strings.Join(suffixes, ", …"))
			case named && !tagged:
				t.Errorf("%s is named for a real server but does not begin with //go:build integration", f)
			}
			if tagged {
				seen++
			}
		}
	}
	if seen == 0 {
		t.Fatal("no file carries the integration tag: the walk is broken")
	}
}
