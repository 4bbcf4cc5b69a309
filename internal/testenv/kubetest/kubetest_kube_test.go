//go:build integration

package kubetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

const childEnv = "KUBETEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		err := child(dir)
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(kubetest.Main(m))
}

// child is the test binary run as a helper process: it starts etcd in dir,
// prints its pid and waits to be killed.
func child(dir string) error {
	b, err := kubetest.Locate()
	if err != nil {
		return err
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	p, err := testproc.Start(dir, "etcd", b.Etcd, []string{"--data-dir", dir + "/etcd",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1])}, nil)
	if err != nil {
		return err
	}
	// Only a running etcd proves anything when the helper is killed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitFor(ctx, func(ctx context.Context) error { return get(ctx, client+"/health") }); err != nil {
		return err
	}
	fmt.Printf("pid %d\n", p.Pid())
	select {} // until killed
}

// TestChildrenDieWithTheTest kills a test binary that started a server and
// checks that the server does not outlive it.
func TestChildrenDieWithTheTest(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		t.Fatalf("helper printed %q", line)
	}
	if !alive(pid) {
		t.Fatalf("etcd (pid %d) is not running under the helper", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("helper exited cleanly after SIGKILL")
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Logf("kill leftover etcd: %v", err)
			}
			t.Fatalf("etcd (pid %d) outlived the killed test binary", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid is a live process: it exists and is not a
// zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// TestServiceAccountConfig checks that a test can act as a ServiceAccount
// with exactly the rules it was given.
func TestServiceAccountConfig(t *testing.T) {
	e := kubetest.Current(t)
	ns := e.Namespace(t)
	cfg := e.ServiceAccount(t, ns, "reader", []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}})
	cs := kubetest.Clientset(t, cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list configmaps as reader: %v", err)
	}
	if _, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as reader: %v, want forbidden", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list configmaps in another namespace: %v, want forbidden", err)
	}
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// TestArgoCD drives a real Argo CD through a sync, a new revision, a failed
// sync and a rollback.
func TestArgoCD(t *testing.T) {
	e := kubetest.Current(t)
	ctx := context.Background()
	started := time.Now()
	if err := e.StartArgoCD(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Argo CD %s started in %s", kubetest.ArgoCDVersion, time.Since(started).Round(time.Millisecond))
	ns := e.Namespace(t)
	repo := kubetest.NewRepo(t)
	rev1 := repo.Commit(t, "v1", map[string]string{"app/demo.yaml": configMap("demo", "one")})
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "demo-" + ns
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": kubetest.ArgoNamespace},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": repo.URL, "path": "app", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
		},
	}}
	if _, err := apps.Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := apps.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete application: %v", err)
		}
	})
	cms := kubetest.Clientset(t, e.Admin).CoreV1().ConfigMaps(ns)
	value := func() string {
		cm, err := cms.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return cm.Data["value"]
	}

	t.Run("sync to Synced and Healthy", func(t *testing.T) {
		sync(t, apps, name, "")
		kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			return str(a, "status", "sync", "status") == "Synced" && str(a, "status", "health", "status") == "Healthy" &&
				str(a, "status", "sync", "revision") == rev1
		})
		if v := value(); v != "one" {
			t.Errorf("configmap value %q, want one", v)
		}
	})
	t.Run("a new commit is a new revision and history entry", func(t *testing.T) {
		rev2 := repo.Commit(t, "v2", map[string]string{"app/demo.yaml": configMap("demo", "two")})
		sync(t, apps, name, "")
		a := kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			return str(a, "status", "sync", "revision") == rev2 && str(a, "status", "operationState", "phase") == "Succeeded" &&
				len(history(a)) >= 2
		})
		if h := history(a); str(&unstructured.Unstructured{Object: h[len(h)-1].(map[string]any)}, "revision") != rev2 {
			t.Errorf("last history entry %v, want revision %s", h[len(h)-1], rev2)
		}
		if v := value(); v != "two" {
			t.Errorf("configmap value %q, want two", v)
		}
	})
	t.Run("an invalid manifest fails the sync", func(t *testing.T) {
		rev3 := repo.Commit(t, "broken", map[string]string{"app/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  value: [1, 2]\n"})
		sync(t, apps, name, "")
		a := kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			p := str(a, "status", "operationState", "phase")
			return (p == "Failed" || p == "Error") && str(a, "status", "operationState", "syncResult", "revision") == rev3
		})
		t.Logf("failed sync: %s", str(a, "status", "operationState", "message"))
	})
	t.Run("rollback to the first revision", func(t *testing.T) {
		before := len(history(kubetest.WaitApplication(t, apps, name, func(*unstructured.Unstructured) bool { return true })))
		sync(t, apps, name, rev1)
		a := kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			return str(a, "status", "operationState", "phase") == "Succeeded" &&
				str(a, "status", "operationState", "syncResult", "revision") == rev1
		})
		h := history(a)
		if len(h) != before+1 || str(&unstructured.Unstructured{Object: h[len(h)-1].(map[string]any)}, "revision") != rev1 {
			t.Errorf("history after rollback %v, want a new entry for %s", h, rev1)
		}
		if v := value(); v != "one" {
			t.Errorf("configmap value after rollback %q, want one", v)
		}
	})
}

func str(a *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(a.Object, path...)
	return s
}

func history(a *unstructured.Unstructured) []any {
	h, _, _ := unstructured.NestedSlice(a.Object, "status", "history")
	return h
}

// sync starts a sync operation, as `argocd app sync` does: to revision, or
// to the target revision when revision is "".
func sync(t *testing.T, apps dynamic.ResourceInterface, name, revision string) {
	t.Helper()
	op := map[string]any{"initiatedBy": map[string]any{"username": "kubetest"}, "sync": map[string]any{"revision": revision}}
	patch, err := json.Marshal(map[string]any{"operation": op})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStrimziCRDs installs Strimzi's CRDs, which the deployment tests
// validate their manifests against.
func TestStrimziCRDs(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.InstallStrimziCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"kafkas", "kafkatopics", "kafkausers", "kafkanodepools"} {
		gvr := kubetest.ApplicationGVR
		gvr.Group, gvr.Version, gvr.Resource = "kafka.strimzi.io", "v1", r
		if _, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("list %s: %v", r, err)
		}
	}
}
