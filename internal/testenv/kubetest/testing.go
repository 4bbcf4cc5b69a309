package kubetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Runner runs tests: a *testing.M, or another helper's Main wrapped around
// one.
type Runner interface{ Run() int }

var (
	mu      sync.Mutex
	current *Env
)

// Main is TestMain for packages that need Kubernetes: it starts the
// environment once, runs the tests and stops it. The binaries must have been
// built (make kube-tools, which make test runs first): a cold build takes
// longer than go test's default timeout. If the environment cannot start, the
// package fails with the reason and what to do; nothing is skipped.
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
func Main(m Runner) int {
	bin, err := Locate()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kubetest: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	started := time.Now()
	e, err := Start(ctx, bin)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kubetest: cannot start Kubernetes %s: %v\n", KubernetesVersion, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "Kubernetes %s ready at %s in %s (kubetest)\n", KubernetesVersion, e.URL, time.Since(started).Round(time.Millisecond))
	mu.Lock()
	current = e
	mu.Unlock()
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Current returns the environment Main started.
func Current(t testing.TB) *Env {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		t.Fatal("kubetest: no environment; call kubetest.Main from TestMain")
	}
	return current
}

// Clientset returns a clientset for cfg or fails the test.
func Clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Namespace creates a namespace for the test, deleted when it ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	cs := Clientset(t, e.Admin)
	name := "t-" + randomSuffix(8)
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// ServiceAccount creates a ServiceAccount in ns bound to a Role with rules,
// and returns a rest.Config that authenticates as it, so tests can check
// that those rules are enough (and no more than enough).
func (e *Env) ServiceAccount(t testing.TB, ns, name string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	cs := Clientset(t, e.Admin)
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
	return e.TokenConfig(t, ns, name)
}

// TokenConfig returns a rest.Config that authenticates as the existing
// ServiceAccount ns/name.
func (e *Env) TokenConfig(t testing.TB, ns, name string) *rest.Config {
	t.Helper()
	expiry := int64(3600)
	tok, err := Clientset(t, e.Admin).CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", ns, name, err)
	}
	cfg := rest.CopyConfig(e.Admin)
	cfg.BearerToken = tok.Status.Token
	return cfg
}
