//go:build integration

package argocd_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

const (
	// chart is the Helm chart whose spoke part installs the RBAC of
	// deploy/rbac/spoke.yaml.
	chart = "../../deploy/helm/argosy"
	// spokeNamespace is the spoke's own namespace, the release's.
	spokeNamespace = "argosy-spoke"
)

// installSpoke renders the chart's spoke part (helm template) and applies
// what it renders: the spoke's ServiceAccount, Roles and RoleBindings among
// the rest. It returns the objects.
func installSpoke(t *testing.T, e *kubetest.Env) []*unstructured.Unstructured {
	t.Helper()
	ctx := t.Context()
	// Without the read access of live questions (deploy/rbac/spoke-live.yaml,
	// deploy's TestSpokeLiveRBAC): this is the spoke's access to change
	// things.
	out, err := kubetest.Helm(ctx, "template", "argosy", chart, "--namespace", spokeNamespace, "-f", chart+"/ci/spoke-join-values.yaml",
		"--set", "spoke.argocdNamespace="+kubetest.ArgoNamespace, "--set", "spoke.liveQuestions.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.ParseYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubetest.Clientset(t, e.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spokeNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.ApplyObjects(ctx, spokeNamespace, objs...); err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestSpokeRBAC installs the spoke's RBAC with the Helm chart (whose Roles
// are deploy/rbac/spoke.yaml's), runs everything the
// spoke does in its cluster as that ServiceAccount against a real Argo CD
// (all of it through this package's Client, and its state and Lease in its
// own namespace through spoke/kube), and checks with SelfSubjectAccessReview
// that the allowed verbs equal the declared ones, namespace by namespace.
func TestSpokeRBAC(t *testing.T) {
	e := kubetest.Current(t)
	ctx := t.Context()
	if err := e.StartArgoCD(ctx); err != nil {
		t.Fatal(err)
	}
	objs := installSpoke(t, e)
	cfg := e.TokenConfig(t, spokeNamespace, "argosy-spoke")
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the spoke works with it", func(t *testing.T) {
		ctx := t.Context()
		f := newFixture(t)
		f.argo = newClient(t, dyn) // act as the spoke's ServiceAccount
		f.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": configMap("demo", "one")})
		name := "rbac-" + f.ns
		ref := argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
		if err := f.argo.Apply(ctx, f.app(name, 1)); err != nil {
			t.Fatal(err)
		}
		if err := f.argo.Apply(ctx, f.app(name, 2)); err != nil {
			t.Fatal(err)
		}
		for _, op := range []argocd.Operation{{Kind: schemas.OperationRefresh}, {Kind: schemas.OperationSync}} {
			if err := f.argo.Operate(ctx, ref, op); err != nil {
				t.Fatalf("%s: %v", op.Kind, err)
			}
		}
		kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
			return str(a, "status", "operationState", "phase") == "Succeeded"
		})
		if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationRollback, HistoryID: 0}); err != nil {
			t.Fatal(err)
		}
		// A local edit (as an administrator), which the spoke reverts. Argo
		// CD writes the Application too, so both retry on conflicts.
		if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			edited, err := f.apps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(edited.Object, "HEAD", "spec", "source", "targetRevision"); err != nil {
				return err
			}
			_, err = f.apps.Update(ctx, edited, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var fields []string
		if err := retry.RetryOnConflict(retry.DefaultBackoff, func() (err error) {
			fields, _, err = f.argo.Revert(ctx, ref, f.app(name, 2).Spec)
			return err
		}); err != nil || len(fields) != 1 {
			t.Fatalf("revert: fields %v, %v", fields, err)
		}
		proj := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindAppProject, Namespace: kubetest.ArgoNamespace, Name: "p-" + f.ns},
			Spec: []byte(`{"sourceRepos":["*"]}`), Generation: 1}
		repo := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindRepository, Namespace: kubetest.ArgoNamespace, Name: "r-" + f.ns},
			Data: map[string]string{"url": "https://git.example.com/r.git"}, Generation: 1}
		for _, o := range []*argocd.Object{proj, repo} {
			if err := f.argo.Apply(ctx, o); err != nil {
				t.Fatal(err)
			}
			if err := f.argo.Delete(ctx, o.Ref, false); err != nil {
				t.Fatal(err)
			}
		}
		state, err := kube.NewState(dyn, spokeNamespace, "argosy-spoke-rbac-"+f.ns)
		if err != nil {
			t.Fatal(err)
		}
		for gen := range int64(2) {
			if err := state.Put(ctx, "k", spoke.Applied{Generation: gen + 1}); err != nil {
				t.Fatal(err)
			}
		}
		if a, ok, err := state.Get(ctx, "k"); err != nil || !ok || a.Generation != 2 {
			t.Fatalf("state: %+v %v %v", a, ok, err)
		}
		if err := state.SaveMarks(ctx, map[string]spoke.DeployMark{"argocd/x": {UID: "u", LastHistoryID: 3}}, nil); err != nil {
			t.Fatal(err)
		}
		if m, err := state.Marks(ctx); err != nil || m["argocd/x"].LastHistoryID != 3 {
			t.Fatalf("marks: %+v %v", m, err)
		}
		if err := state.Put(ctx, "gone", spoke.Applied{Generation: 1, Deleted: true, Transient: true}); err != nil {
			t.Fatal(err)
		}
		if n, err := state.Prune(ctx, func(string, spoke.Applied) bool { return true }); err != nil || n != 1 {
			t.Fatalf("prune: %d, %v", n, err)
		}
		lease, err := kube.NewLease(dyn, spokeNamespace, "argosy-spoke", "rbac-test",
			kube.LeaseTiming{Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		held := false
		if err := lease.Run(ctx, func(context.Context) error { held = true; time.Sleep(time.Second); return nil }); err != nil || !held {
			t.Fatalf("lease: held %v, %v", held, err)
		}
		local := newClient(t, dyn, argocd.KeepLocal()) // autonomous mode reads before it writes
		if err := local.Apply(ctx, f.app(name, 3)); err != nil {
			t.Fatal(err)
		}
		if err := f.argo.Delete(ctx, ref, true); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("it is granted exactly what it declares", func(t *testing.T) {
		ctx := t.Context()
		declared := map[string]bool{}
		for _, o := range objs {
			if o.GetKind() != "Role" {
				continue
			}
			var role rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
			for _, r := range role.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							if len(r.ResourceNames) == 0 {
								declared[fmt.Sprintf("%s:%s/%s/%s", role.Namespace, g, res, v)] = true
							}
							for _, name := range r.ResourceNames {
								declared[fmt.Sprintf("%s:%s/%s/%s/%s", role.Namespace, g, res, v, name)] = true
							}
						}
					}
				}
			}
		}
		verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
		resources := []struct{ group, resource string }{
			{"argoproj.io", "applications"}, {"argoproj.io", "appprojects"}, {"argoproj.io", "applicationsets"},
			{"", "secrets"}, {"", "configmaps"}, {"", "pods"}, {"", "serviceaccounts"}, {"apps", "deployments"},
			{"rbac.authorization.k8s.io", "roles"}, {"rbac.authorization.k8s.io", "rolebindings"}, {"coordination.k8s.io", "leases"},
		}
		// Objects the Role names: each is checked by name, beside one it
		// does not name.
		names := map[string][]string{"coordination.k8s.io/leases": {"argosy-spoke", "kube-controller-manager"}}
		reviews := kubetest.Clientset(t, cfg).AuthorizationV1().SelfSubjectAccessReviews()
		var allowed []string
		for _, r := range resources {
			for _, v := range verbs {
				for _, name := range append([]string{""}, names[r.group+"/"+r.resource]...) {
					for _, ns := range []string{kubetest.ArgoNamespace, spokeNamespace, "default"} {
						rev, err := reviews.Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
							ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: v, Group: r.group, Resource: r.resource, Name: name}}}, metav1.CreateOptions{})
						if err != nil {
							t.Fatal(err)
						}
						unnamed := fmt.Sprintf("%s:%s/%s/%s", ns, r.group, r.resource, v)
						key := unnamed
						if name != "" {
							key += "/" + name
						}
						if rev.Status.Allowed && (name == "" || !declared[unnamed]) {
							allowed = append(allowed, key)
						}
					}
				}
			}
		}
		var want []string
		for k := range declared {
			want = append(want, k)
		}
		slices.Sort(allowed)
		slices.Sort(want)
		if !slices.Equal(allowed, want) {
			t.Errorf("allowed %v\ndeclared %v", allowed, want)
		}
	})
}
