//go:build integration

package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// admissionDenial is what the chart's policy says when it refuses a call.
const admissionDenial = "may create, change and delete only Secrets named argosy-repo-*"

// installSpokeFor installs the chart's spoke part for real (not a dry
// run) as release argosy in namespace ns, confining the spoke to Argo CD
// in argocdNS, and returns a client acting as the spoke's ServiceAccount.
// The cluster-scoped objects it made are deleted when the test ends.
func installSpokeFor(t *testing.T, e *kubetest.Env, ns, argocdNS string) kubernetes.Interface {
	t.Helper()
	objs := render(t, ns, "-f", chart+"/ci/spoke-join-values.yaml", "--set", "spoke.argocdNamespace="+argocdNS)
	if err := e.ApplyObjects(t.Context(), ns, objs...); err != nil {
		t.Fatal(err)
	}
	deleteClusterScoped(t, e, objs)
	return kubetest.Clientset(t, e.TokenConfig(t, ns, "argosy-spoke"))
}

// deleteClusterScoped deletes, when the test ends, the cluster-scoped
// objects among objs that it applied: admission policies and their
// bindings, ClusterRoles and ClusterRoleBindings.
func deleteClusterScoped(t *testing.T, e *kubetest.Env, objs []*unstructured.Unstructured) {
	t.Helper()
	admin := kubetest.Clientset(t, e.Admin)
	t.Cleanup(func() {
		ctx := context.Background()
		vap, rbac := admin.AdmissionregistrationV1(), admin.RbacV1()
		for _, o := range objs {
			var err error
			switch o.GetKind() {
			case "ValidatingAdmissionPolicy":
				err = vap.ValidatingAdmissionPolicies().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			case "ValidatingAdmissionPolicyBinding":
				err = vap.ValidatingAdmissionPolicyBindings().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			case "MutatingWebhookConfiguration":
				err = vap.MutatingWebhookConfigurations().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			case "ClusterRole":
				err = rbac.ClusterRoles().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			case "ClusterRoleBinding":
				err = rbac.ClusterRoleBindings().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			}
			if err != nil {
				t.Logf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
}

// patchSecret adds a label to the Secret ns/name.
func patchSecret(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	_, err := cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
	return err
}

func createSecret(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	return err
}

// waitDenied waits until the spoke's patch of argocd-secret is refused by
// admission: a new policy takes effect once the apiserver's informer has
// it, a moment after it was created.
func waitDenied(t *testing.T, spoke kubernetes.Interface, argocdNS string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := patchSecret(t.Context(), spoke, argocdNS, "argocd-secret")
		if err != nil && strings.Contains(err.Error(), admissionDenial) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the chart was installed, the spoke's patch of %s/argocd-secret is not refused by admission: %v", argocdNS, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSpokeAdmissionPolicy installs the chart's spoke part for real on a
// real kube-apiserver and acts as the spoke's ServiceAccount: its Role
// lets it create, patch and delete any Secret in Argo CD's namespace (as
// `kubectl auth can-i patch secret/argocd-secret` still says), and the
// chart's ValidatingAdmissionPolicy refuses all of that but on Secrets
// named argosy-repo-*, with a message that says so. An administrator is
// not confined. A second install in another namespace, confining its own
// spoke to another Argo CD namespace, does not replace the first's policy.
func TestSpokeAdmissionPolicy(t *testing.T) {
	e := kubetest.Current(t)
	ctx := t.Context()
	admin := kubetest.Clientset(t, e.Admin)
	spokeNS, argocdNS := e.Namespace(t), e.Namespace(t)
	if err := createSecret(ctx, admin, argocdNS, "argocd-secret"); err != nil {
		t.Fatal(err)
	}
	spoke := installSpokeFor(t, e, spokeNS, argocdNS)
	waitDenied(t, spoke, argocdNS)

	ssar, err := spoke.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: argocdNS, Verb: "patch", Resource: "secrets", Name: "argocd-secret"}}}, metav1.CreateOptions{})
	if err != nil || !ssar.Status.Allowed {
		t.Errorf("RBAC no longer lets the spoke patch argocd-secret (%+v, %v): the policy is the confinement this test checks", ssar, err)
	}

	if err := createSecret(ctx, admin, argocdNS, "other"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		call    func(context.Context, kubernetes.Interface) error
		allowed bool
	}{
		{"patch argocd-secret", func(ctx context.Context, cs kubernetes.Interface) error {
			return patchSecret(ctx, cs, argocdNS, "argocd-secret")
		}, false},
		{"create another Secret", func(ctx context.Context, cs kubernetes.Interface) error {
			return createSecret(ctx, cs, argocdNS, "another")
		}, false},
		{"patch another Secret", func(ctx context.Context, cs kubernetes.Interface) error {
			return patchSecret(ctx, cs, argocdNS, "other")
		}, false},
		{"delete another Secret", func(ctx context.Context, cs kubernetes.Interface) error {
			return cs.CoreV1().Secrets(argocdNS).Delete(ctx, "other", metav1.DeleteOptions{})
		}, false},
		{"create argosy-repo-x", func(ctx context.Context, cs kubernetes.Interface) error {
			return createSecret(ctx, cs, argocdNS, "argosy-repo-x")
		}, true},
		{"patch argosy-repo-x", func(ctx context.Context, cs kubernetes.Interface) error {
			return patchSecret(ctx, cs, argocdNS, "argosy-repo-x")
		}, true},
		{"delete argosy-repo-x", func(ctx context.Context, cs kubernetes.Interface) error {
			return cs.CoreV1().Secrets(argocdNS).Delete(ctx, "argosy-repo-x", metav1.DeleteOptions{})
		}, true},
	}
	for _, s := range steps {
		err := s.call(ctx, spoke)
		switch {
		case s.allowed && err != nil:
			t.Errorf("as the spoke, %s: %v, want it allowed", s.name, err)
		case !s.allowed && (err == nil || !strings.Contains(err.Error(), admissionDenial)):
			t.Errorf("as the spoke, %s: %v, want it refused by the admission policy", s.name, err)
		}
	}
	for _, s := range steps { // an administrator is not confined
		if s.name == "create argosy-repo-x" {
			continue // the spoke's delete took it; the administrator makes it next
		}
		if s.name == "patch argosy-repo-x" {
			if err := createSecret(ctx, admin, argocdNS, "argosy-repo-x"); err != nil {
				t.Errorf("as an administrator, create argosy-repo-x: %v", err)
			}
		}
		if err := s.call(ctx, admin); err != nil {
			t.Errorf("as an administrator, %s: %v", s.name, err)
		}
	}

	t.Run("a second install in another namespace", func(t *testing.T) {
		ctx := t.Context()
		spokeNS2, argocdNS2 := e.Namespace(t), e.Namespace(t)
		if err := createSecret(ctx, admin, argocdNS2, "argocd-secret"); err != nil {
			t.Fatal(err)
		}
		spoke2 := installSpokeFor(t, e, spokeNS2, argocdNS2)
		waitDenied(t, spoke2, argocdNS2)
		// The first spoke is still confined (its policy was not replaced).
		if err := patchSecret(ctx, spoke, argocdNS, "argocd-secret"); err == nil || !strings.Contains(err.Error(), admissionDenial) {
			t.Errorf("after a second install, the first spoke's patch of argocd-secret: %v, want it refused", err)
		}
		if err := createSecret(ctx, spoke, argocdNS, fmt.Sprintf("argosy-repo-%s", spokeNS2)); err != nil {
			t.Errorf("after a second install, the first spoke's argosy-repo- Secret: %v", err)
		}
	})
}

// TestSpokeAdmissionPolicySecretType checks that the policy confines what
// the spoke's Secrets are to Argo CD, not only their names: a Secret named
// argosy-repo-* labelled as an Argo CD cluster (or repo-creds) Secret is
// not a repository Secret, and Argo CD would take it as a new destination
// cluster with the credentials it carries.
func TestSpokeAdmissionPolicySecretType(t *testing.T) {
	e := kubetest.Current(t)
	ctx := t.Context()
	admin := kubetest.Clientset(t, e.Admin)
	spokeNS, argocdNS := e.Namespace(t), e.Namespace(t)
	if err := createSecret(ctx, admin, argocdNS, "argocd-secret"); err != nil {
		t.Fatal(err)
	}
	spoke := installSpokeFor(t, e, spokeNS, argocdNS)
	waitDenied(t, spoke, argocdNS)

	for _, typ := range []string{"cluster", "repo-creds"} {
		name := "argosy-repo-as-" + typ
		_, err := spoke.CoreV1().Secrets(argocdNS).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"argocd.argoproj.io/secret-type": typ}},
			StringData: map[string]string{"name": "evil", "server": "https://attacker.example", "config": `{"bearerToken":"x"}`},
		}, metav1.CreateOptions{})
		if err == nil {
			t.Errorf("as the spoke, create %s/%s labelled argocd.argoproj.io/secret-type=%s: allowed, want it refused by the admission policy", argocdNS, name, typ)
		}
	}
	if err := createSecret(ctx, spoke, argocdNS, "argosy-repo-plain"); err != nil {
		t.Fatal(err)
	}
	_, err := spoke.CoreV1().Secrets(argocdNS).Patch(ctx, "argosy-repo-plain", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"argocd.argoproj.io/secret-type":"cluster"}}}`), metav1.PatchOptions{})
	if err == nil {
		t.Errorf("as the spoke, relabel %s/argosy-repo-plain as a cluster Secret: allowed, want it refused", argocdNS)
	}
}
