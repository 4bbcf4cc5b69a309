//go:build integration

package kube_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/spoke"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// fixture is a real Argo CD, a namespace for an Application's resources
// and a git repository for its source.
type fixture struct {
	argo *argocd.Client
	apps dynamic.ResourceInterface
	ns   string
	repo *kubetest.Repo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{argo: newArgo(t, dyn), apps: dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace),
		ns: e.Namespace(t), repo: kubetest.NewRepo(t)}
}

// newArgo is the Argo CD client the agent uses, on dyn.
func newArgo(t *testing.T, dyn dynamic.Interface, opts ...argocd.Option) *argocd.Client {
	t.Helper()
	a, err := argocd.New(dyn, spoke.FieldManager, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// app is generation gen of an Application from the fixture's repository.
func (f *fixture) app(name string, gen int64) *spoke.Object {
	spec, _ := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": f.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": f.ns}})
	return &spoke.Object{Ref: spoke.Ref{Kind: spoke.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name},
		Spec: spec, Generation: gen}
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func str(a *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(a.Object, path...)
	return s
}
