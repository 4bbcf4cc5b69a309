//go:build integration

package argocd_test

import (
	"encoding/json"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestProjectCheckAgreesWithArgoCD writes each Application twice: through
// Client.Apply, which checks it against its AppProject, and as it is, past
// the check, for the real Argo CD controller to judge. Apply refuses
// exactly those that Argo CD marks InvalidSpecError, and writes nothing of
// them.
func TestProjectCheckAgreesWithArgoCD(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": configMap("project-check", "one")})
	dyn, err := dynamic.NewForConfig(kubetest.Current(t).Admin)
	if err != nil {
		t.Fatal(err)
	}
	project, guarded := "team-"+f.ns, "guarded-"+f.ns
	for proj, dests := range map[string][]any{
		project: {map[string]any{"server": "https://kubernetes.default.svc", "namespace": f.ns + "*"}},
		// A "!" entry permits every other namespace, and denies its own
		// whatever the other entries say.
		guarded: {map[string]any{"server": "*", "namespace": "*"}, map[string]any{"server": "*", "namespace": "!" + f.ns + "-secret"}},
	} {
		_, err = dyn.Resource(kubetest.AppProjectGVR).Namespace(kubetest.ArgoNamespace).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": map[string]any{"name": proj},
			"spec": map[string]any{"sourceRepos": []any{f.repo.URL}, "destinations": dests}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	src := map[string]any{"repoURL": f.repo.URL, "path": "app", "targetRevision": "main"}
	inCluster := func(ns string) map[string]any {
		return map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}
	}
	cases := []struct {
		name    string
		project string
		spec    map[string]any
		refused bool
	}{
		{"permitted", project, map[string]any{"source": src, "destination": inCluster(f.ns)}, false},
		{"by cluster name", project, map[string]any{"source": src, "destination": map[string]any{"name": "in-cluster", "namespace": f.ns}}, false},
		{"missing project", "nosuch-" + f.ns, map[string]any{"source": src, "destination": inCluster(f.ns)}, true},
		{"namespace", project, map[string]any{"source": src, "destination": inCluster("other-" + f.ns)}, true},
		{"another namespace, no entry denies", guarded, map[string]any{"source": src, "destination": inCluster("other-" + f.ns)}, false},
		{"denied namespace", guarded, map[string]any{"source": src, "destination": inCluster(f.ns + "-secret")}, true},
		{"repository", project, map[string]any{"source": map[string]any{"repoURL": "https://git.example/other.git", "path": "app"},
			"destination": inCluster(f.ns)}, true},
		{"one of several sources", project, map[string]any{"sources": []any{src, map[string]any{"repoURL": "https://git.example/other.git", "path": "app"}},
			"destination": inCluster(f.ns)}, true},
	}
	for i, c := range cases {
		c.spec["project"] = c.project
		spec, err := json.Marshal(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		checked := argocd.Object{Ref: argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name(i, "checked", f.ns)},
			Spec: spec, Generation: 1}
		err = f.argo.Apply(ctx, &checked)
		var perm *argocd.PermanentError
		if (err != nil) != c.refused || (err != nil && !errors.As(err, &perm)) {
			t.Errorf("%s: Apply: %v, want refused %v", c.name, err, c.refused)
		}
		if _, err := f.apps.Get(ctx, checked.Name, metav1.GetOptions{}); c.refused && err == nil {
			t.Errorf("%s: refused, and written anyway", c.name)
		}
		raw := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name(i, "raw", f.ns)}, "spec": c.spec}}
		if _, err := f.apps.Create(ctx, raw, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		var invalid string
		kubetest.WaitApplication(t, f.apps, name(i, "raw", f.ns), func(a *unstructured.Unstructured) bool {
			conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
			for _, cond := range conds {
				if m, _ := cond.(map[string]any); m["type"] == "InvalidSpecError" {
					invalid, _ = m["message"].(string)
					return true
				}
			}
			sync := str(a, "status", "sync", "status")
			return sync == "Synced" || sync == "OutOfSync"
		})
		t.Logf("%s: Argo CD's InvalidSpecError: %q", c.name, invalid)
		if (invalid != "") != c.refused {
			t.Errorf("%s: Argo CD says %q, the check refused %v", c.name, invalid, c.refused)
		}
	}
}

// name is the name of case i's Application, written checked or raw.
func name(i int, kind, ns string) string { return "p" + string(rune('a'+i)) + "-" + kind + "-" + ns }
