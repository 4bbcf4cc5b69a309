package apicmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const guestbook = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps
    path: guestbook
    targetRevision: HEAD
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  revisionHistoryLimit: 9007199254740993
`

// TestReadManifests reads the shapes a manifest comes in: several YAML
// documents (empty ones and comments skipped), JSON, a List, a JSON
// array, standard input and a directory.
func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	multi := write("multi.yaml", "# apps\n---\n"+guestbook+"--- # the second\n"+strings.Replace(guestbook, "name: guestbook", "name: billing", 1)+"---\n")
	js := write("app.json", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"j","namespace":"apps"},"spec":{"project":"p"}}`)
	list := write("list.yml", "kind: List\nitems:\n- {kind: AppProject, metadata: {name: a}}\n- {kind: AppProject, metadata: {name: b}}\n")
	arr := write("arr.txt", `[{"kind":"AppProject","metadata":{"name":"x"}}]`)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b.yaml", "a.json", "notes.md"} {
		if err := os.WriteFile(filepath.Join(sub, n), []byte(`{"kind":"AppProject","metadata":{"name":"`+n+`"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		files []string
		stdin string
		want  []string // Source Kind Name Namespace
	}{
		{[]string{multi}, "", []string{multi + ", document 2 Application guestbook ", multi + ", document 3 Application billing "}},
		{[]string{js}, "", []string{js + " Application j apps"}},
		{[]string{list, arr}, "", []string{list + ", item 1 AppProject a ", list + ", item 2 AppProject b ", arr + ", item 1 AppProject x "}},
		{[]string{"-"}, guestbook, []string{"standard input Application guestbook "}},
		{[]string{sub}, "", []string{filepath.Join(sub, "a.json") + " AppProject a.json ", filepath.Join(sub, "b.yaml") + " AppProject b.yaml "}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.files, ","), func(t *testing.T) {
			ms, err := ReadManifests(strings.NewReader(tc.stdin), tc.files)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, strings.Join([]string{m.Source, m.Kind, m.Name, m.Namespace}, " "))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("manifests (-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		files []string
		stdin string
		want  string
	}{
		{[]string{write("empty.yaml", "# nothing\n---\n")}, "", "no objects"},
		{[]string{write("dup.yaml", "kind: Application\nkind: AppProject\n")}, "", `key "kind" already set in map`},
		{[]string{"-"}, "kind: [", "standard input: yaml: line 1: did not find expected node content"},
		{[]string{filepath.Join(dir, "missing.yaml")}, "", "no such file or directory"},
		{[]string{write("scalar.yaml", "just text\n")}, "", "scalar.yaml: not an object"},
	} {
		if _, err := ReadManifests(strings.NewReader(tc.stdin), tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.files, err, tc.want)
		}
	}
}

// TestCheckManifests checks what a manifest must have before it is sent,
// and the namespace it is given.
func TestCheckManifests(t *testing.T) {
	read := func(body string) []Manifest {
		ms, err := ReadManifests(strings.NewReader(body), []string{"-"})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	ms := read(guestbook)
	if err := ForKind(ms, "Application", "apps", false); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct{ Namespace string }
		Spec     struct{ RevisionHistoryLimit json.Number }
	}
	if err := json.Unmarshal(ms[0].JSON, &obj); err != nil || obj.Metadata.Namespace != "apps" || ms[0].Namespace != "apps" ||
		obj.Spec.RevisionHistoryLimit != "9007199254740993" {
		t.Errorf("namespace %q (%q), number %q, %v: want apps and the number unrounded", obj.Metadata.Namespace, ms[0].Namespace, obj.Spec.RevisionHistoryLimit, err)
	}
	inApps := strings.Replace(guestbook, "  name: guestbook\n", "  name: guestbook\n  namespace: apps\n", 1)
	if err := ForKind(read(inApps), "Application", "apps", true); err != nil {
		t.Errorf("the namespace --namespace names: %v", err)
	}
	for _, tc := range []struct {
		body, kind, ns string
		explicit       bool
		want           string
	}{
		{inApps, "Application", "argocd", true, `standard input: Application "guestbook": metadata.namespace "apps" does not match --namespace "argocd"`},
		{strings.Replace(guestbook, "  project: default\n", "", 1), "Application", "argocd", false, `Application "guestbook": spec.project: required`},
		{strings.Replace(guestbook, "v1alpha1", "v1", 1), "Application", "argocd", false, `apiVersion "argoproj.io/v1": want argoproj.io/v1alpha1`},
		{strings.Replace(guestbook, "name: guestbook", "labels: {}", 1), "Application", "argocd", false, `Application "": metadata.name: required`},
		{guestbook, "AppProject", "argocd", false, `standard input: kind "Application": this command applies AppProjects; apply Applications with argosy app apply`},
	} {
		if err := ForKind(read(tc.body), tc.kind, tc.ns, tc.explicit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}
