//go:build integration

package argocd_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// BenchmarkApply measures server-side applies of Applications against the
// real kube-apiserver: what bounds the spoke's apply throughput. Each
// iteration applies a new generation of one of 100 Applications.
func BenchmarkApply(b *testing.B) {
	e := kubetest.Current(b)
	if err := e.InstallArgoCDCRDs(b.Context()); err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		b.Fatal(err)
	}
	argo := newClient(b, dyn)
	ns := e.Namespace(b)
	spec, err := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		obj := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindApplication, Namespace: ns, Name: fmt.Sprintf("app-%03d", i%100)},
			Spec: spec, Generation: int64(i/100 + 1)}
		if err := argo.Apply(ctx, obj); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
}
