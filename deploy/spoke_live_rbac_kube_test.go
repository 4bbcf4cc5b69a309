//go:build integration

package deploy_test

import (
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke/live"
)

// TestSpokeLiveRBAC installs the chart's spoke part (spoke.liveQuestions
// on, the default) on a real apiserver and answers live questions as the
// spoke's ServiceAccount, with spoke/live as the agent does: the tree of
// an Application whose resources are a Deployment and a ConfigMap in a
// namespace the spoke has no Role in, and the ConfigMap's manifest. The
// ClusterRole reads and never writes; it may read Pods' logs. Without its
// binding the same tree is refused by the apiserver.
func TestSpokeLiveRBAC(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	spokeNS, argocdNS, appNS := e.Namespace(t), e.Namespace(t), e.Namespace(t)
	cs := installSpokeFor(t, e, spokeNS, argocdNS)
	admin, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	adminCS := kubetest.Clientset(t, e.Admin)
	if _, err := adminCS.CoreV1().ConfigMaps(appNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": argocdNS},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://git.example/app"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": appNS}},
		"status": map[string]any{"resources": []any{
			map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": appNS, "name": "settings"},
		}},
	}}
	if _, err := admin.Resource(kubetest.ApplicationGVR).Namespace(argocdNS).Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := e.TokenConfig(t, spokeNS, "argosy-spoke")
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := live.NewPodLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := live.New(dyn, logs, argocdNS)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := src.Tree(ctx, "web")
	if err != nil {
		t.Fatalf("the tree, as the spoke: %v", err)
	}
	if len(tree.Nodes) != 1 || tree.Nodes[0].Kind != "ConfigMap" || tree.Nodes[0].Name != "settings" {
		t.Errorf("tree %+v, want the ConfigMap", tree.Nodes)
	}
	answer, _, err := src.Answer(ctx, &schemas.QueryRequested{Resource: schemas.Resource{Namespace: argocdNS, Name: "web"}, Query: schemas.QueryManifest,
		Target: &schemas.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: appNS, Name: "settings"}})
	if err != nil || !strings.Contains(string(answer), `"settings"`) {
		t.Errorf("the ConfigMap's manifest, as the spoke: %s, %v", answer, err)
	}
	for _, c := range []struct {
		verb, group, resource, sub string
		want                       bool
	}{
		{"get", "", "pods", "log", true},
		{"get", "", "secrets", "", true},
		{"list", "", "pods", "", true},
		{"list", "", "secrets", "", false},
		{"create", "", "configmaps", "", false},
		{"delete", "apps", "deployments", "", false},
		{"patch", "", "secrets", "", false},
	} {
		rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: appNS, Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.sub}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rev.Status.Allowed != c.want {
			t.Errorf("the spoke may %s %s/%s %s in an Application's namespace: %v, want %v", c.verb, c.group, c.resource, c.sub, rev.Status.Allowed, c.want)
		}
	}

	if err := adminCS.RbacV1().ClusterRoleBindings().Delete(ctx, "argosy-spoke-live."+spokeNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver's RBAC follows the deletion within moments.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := src.Tree(ctx, "web")
		if err != nil && strings.Contains(err.Error(), "forbidden") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree without the ClusterRoleBinding: %v, want the apiserver's refusal", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
