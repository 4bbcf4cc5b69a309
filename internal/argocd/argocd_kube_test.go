//go:build integration

package argocd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

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
	return &fixture{argo: newClient(t, dyn), apps: dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace),
		ns: e.Namespace(t), repo: kubetest.NewRepo(t)}
}

// newClient is a Client acting as the agent does, under its field manager.
func newClient(t testing.TB, dyn dynamic.Interface, opts ...argocd.Option) *argocd.Client {
	t.Helper()
	c, err := argocd.New(dyn, "argosy-spoke", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) app(name string, gen int64) *argocd.Object {
	spec, _ := json.Marshal(map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": f.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": f.ns},
	})
	return &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name},
		Spec: spec, Generation: gen, Labels: map[string]string{"team": "web"}}
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// TestApplyOperateDelete drives a real Argo CD through the spoke's
// interface: apply, sync, update, roll back, and a cascading delete.
func TestApplyOperateDelete(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	rev1 := f.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": configMap("demo", "one")})
	name := "demo-" + f.ns
	ref := argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
	if err := f.argo.Apply(ctx, f.app(name, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationSync, RequestedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	a := kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
		return str(a, "status", "sync", "status") == "Synced" && str(a, "status", "operationState", "phase") == "Succeeded"
	})
	if a.GetAnnotations()[argocd.AnnotationGeneration] != "1" || a.GetLabels()["team"] != "web" || a.GetLabels()[argocd.LabelManaged] != "true" {
		t.Errorf("metadata %v %v", a.GetLabels(), a.GetAnnotations())
	}
	if by := str(a, "status", "operationState", "operation", "initiatedBy", "username"); by != "alice" {
		t.Errorf("initiated by %q, want alice", by)
	}

	rev2 := f.repo.Commit(t, "v2", map[string]string{"app/cm.yaml": configMap("demo", "two")})
	if err := f.argo.Apply(ctx, f.app(name, 2)); err != nil { // re-apply: an update
		t.Fatal(err)
	}
	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationRefresh, RefreshType: "hard"}); err != nil {
		t.Fatal(err)
	}
	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationSync}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
		return str(a, "status", "sync", "revision") == rev2 && str(a, "status", "operationState", "phase") == "Succeeded" &&
			a.GetAnnotations()[argocd.AnnotationGeneration] == "2"
	})

	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationRollback, HistoryID: 0}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
		return str(a, "status", "operationState", "phase") == "Succeeded" &&
			str(a, "status", "operationState", "syncResult", "revision") == rev1
	})
	cms := kubetest.Clientset(t, kubetest.Current(t).Admin).CoreV1().ConfigMaps(f.ns)
	if cm, err := cms.Get(ctx, "demo", metav1.GetOptions{}); err != nil || cm.Data["value"] != "one" {
		t.Errorf("after rollback: %v %v, want value one", cm.Data, err)
	}

	if err := f.argo.Delete(ctx, ref, true); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitGone(t, func() error { _, err := f.apps.Get(ctx, name, metav1.GetOptions{}); return err })
	kubetest.WaitGone(t, func() error { _, err := cms.Get(ctx, "demo", metav1.GetOptions{}); return err })
	if err := f.argo.Delete(ctx, ref, true); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
}

// TestTerminate stops a sync that cannot finish: a sync hook Job never
// completes without a kubelet.
func TestTerminate(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.repo.Commit(t, "hook", map[string]string{"app/hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hook\n  annotations:\n    argocd.argoproj.io/hook: Sync\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"})
	name := "hook-" + f.ns
	ref := argocd.Ref{Kind: argocd.KindApplication, Namespace: kubetest.ArgoNamespace, Name: name}
	if err := f.argo.Apply(ctx, f.app(name, 1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.argo.Delete(context.Background(), ref, false); err != nil {
			t.Log(err)
		}
	})
	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationSync}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
		return str(a, "status", "operationState", "phase") == "Running"
	})
	if err := f.argo.Operate(ctx, ref, argocd.Operation{Kind: schemas.OperationTerminate}); err != nil {
		t.Fatal(err)
	}
	a := kubetest.WaitApplication(t, f.apps, name, func(a *unstructured.Unstructured) bool {
		p := str(a, "status", "operationState", "phase")
		return p == "Failed" || p == "Error"
	})
	t.Logf("terminated: %s", str(a, "status", "operationState", "message"))
}

// TestRepositorySecret applies a repository as Argo CD expects it: a Secret
// labelled as a repository, named with Argosy's prefix. A repository that
// bears the name of one of Argo CD's own Secrets neither changes nor
// deletes it.
func TestRepositorySecret(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	secrets := kubetest.Clientset(t, kubetest.Current(t).Admin).CoreV1().Secrets(kubetest.ArgoNamespace)
	obj := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindRepository, Namespace: kubetest.ArgoNamespace, Name: "repo-" + f.ns},
		Generation: 1, Data: map[string]string{"url": "https://git.example.com/x.git", "type": "git", "password": "s3cret"}}
	if err := f.argo.Apply(ctx, obj); err != nil {
		t.Fatal(err)
	}
	s, err := secrets.Get(ctx, argocd.RepositorySecretPrefix+obj.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels["argocd.argoproj.io/secret-type"] != "repository" || string(s.Data["password"]) != "s3cret" || string(s.Data["url"]) != obj.Data["url"] {
		t.Errorf("secret labels %v data %v", s.Labels, s.Data)
	}
	if err := f.argo.Delete(ctx, obj.Ref, false); err != nil {
		t.Fatal(err)
	}
	// Foreground deletion: the Secret may linger, marked, until the
	// garbage collector has seen it.
	if gone, err := secrets.Get(ctx, s.Name, metav1.GetOptions{}); err == nil && gone.DeletionTimestamp == nil {
		t.Error("the repository's Secret is not deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret-" + f.ns}, StringData: map[string]string{"admin.password": "keep"}}
	if _, err := secrets.Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostile := &argocd.Object{Ref: argocd.Ref{Kind: argocd.KindRepository, Namespace: kubetest.ArgoNamespace, Name: own.Name},
		Generation: 1, Data: map[string]string{"url": "https://evil.example.com/x.git", "admin.password": "taken"}}
	if err := f.argo.Apply(ctx, hostile); err != nil {
		t.Fatal(err)
	}
	if err := f.argo.Delete(ctx, hostile.Ref, false); err != nil {
		t.Fatal(err)
	}
	got, err := secrets.Get(ctx, own.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Argo CD's own Secret after a repository of its name was applied and deleted: %v", err)
	}
	if string(got.Data["admin.password"]) != "keep" || got.Labels["argocd.argoproj.io/secret-type"] != "" {
		t.Errorf("Argo CD's own Secret was changed: labels %v, data %v", got.Labels, got.Data)
	}
}

func str(a *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(a.Object, path...)
	return s
}
