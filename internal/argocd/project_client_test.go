package argocd_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/argosyproj/argosy/internal/argocd"
)

// TestApplyChecksTheProject: before it writes an Application, Apply reads
// its AppProject. A missing project, or one that does not permit the
// Application, is a PermanentError (rejected at once) and nothing is
// written; a failure to read the project that may pass is returned as it
// is, to be retried; the server's verdict on the read (forbidden) is
// neither.
func TestApplyChecksTheProject(t *testing.T) {
	projects := schema.GroupResource{Group: "argoproj.io", Resource: "appprojects"}
	narrow := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "team", "namespace": "argocd"},
		"spec":     map[string]any{"sourceRepos": []any{"https://git.example/team/*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "team"}}}}}
	for _, tc := range []struct {
		name      string
		project   string
		getErr    error // of the AppProject's read
		permanent bool
		transient bool
		says      string
	}{
		{name: "missing", project: "nosuch", permanent: true, says: `spec.project: AppProject "nosuch" does not exist in namespace "argocd"`},
		{name: "not permitted", project: "team", permanent: true, says: `spec.destination: server "https://kubernetes.default.svc" namespace "web"`},
		{name: "unavailable", project: "team", getErr: apierrors.NewServiceUnavailable("starting"), transient: true, says: "read its AppProject"},
		{name: "timed out", project: "team", getErr: apierrors.NewServerTimeout(projects, "get", 1), transient: true},
		{name: "forbidden", project: "team", getErr: apierrors.NewForbidden(projects, "team", errors.New("no")), says: "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fake.NewSimpleDynamicClient(runtime.NewScheme(), narrow)
			if tc.getErr != nil {
				dyn.PrependReactor("get", "appprojects", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.getErr })
			}
			c, err := argocd.New(dyn, "argosy-spoke")
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := json.Marshal(map[string]any{"project": tc.project,
				"source":      map[string]any{"repoURL": "https://git.example/team/web.git", "path": "."},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web"}})
			err = c.Apply(t.Context(), &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindApplication, Namespace: "argocd", Name: "web"}, Spec: spec, Generation: 1})
			var perm *argocd.PermanentError
			if err == nil || errors.As(err, &perm) != tc.permanent || argocd.Transient(err) != tc.transient || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("got %v (permanent %v, transient %v), want permanent %v, transient %v, naming %q",
					err, errors.As(err, &perm), argocd.Transient(err), tc.permanent, tc.transient, tc.says)
			}
			for _, a := range dyn.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("%s %s: want nothing written", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}
