//go:build integration

package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// TestHubEndToEnd drives a change from the hub's API through the real
// broker to a real spoke and a real Argo CD, and back to the hub's read
// routes: a cluster is registered and gets a join token, the argosy-spoke
// binary joins with it on first start (making its keys, which the hub
// registers) and trusts the hub's public key from keygen, an Application is
// applied through the API and syncs, its status and deployment show in the
// hub's views (folded by the hub process's own projector), the deployment
// record carrying the commit time the apply named, and deleting it
// through the API removes it from Argo CD. The audit history names each
// call.
func TestHubEndToEnd(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	hubc, _, url := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold",
		"--projector-group", f.prefix + "projector"})
	ns := e.Namespace(t)
	cluster := "e2e-" + ns
	reg, err := hubc.RegisterCluster(t.Context(), cluster, api.ClusterRequest{Labels: map[string]string{"env": "dev"}}, api.WriteOptions{})
	if err != nil || reg.JoinToken == "" {
		t.Fatalf("register = %+v, %v; want a join token", reg, err)
	}
	startSpoke(t, e, f, url, cluster, reg.JoinToken)

	repo := kubetest.NewRepo(t)
	rev := repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "web-" + ns
	manifest := fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":%q,"namespace":%q},
	"spec":{"project":"default","source":{"repoURL":%q,"path":"app","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":%q},"syncPolicy":{"automated":{"prune":true}}}}`,
		name, kubetest.ArgoNamespace, repo.URL, ns)
	committed := time.Now().Add(-90 * time.Minute).UTC().Truncate(time.Second) // CI says when rev was committed
	res, err := hubc.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{cluster}, Manifest: json.RawMessage(manifest),
		Commit: &api.SourceCommit{Revision: rev, CommittedAt: committed}}, api.WriteOptions{IdempotencyKey: "apply-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 1 || res.Events[0].Generation != 1 {
		t.Fatalf("apply answered %+v", res)
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	waitFor(t, 3*time.Minute, "the Application syncs", func() bool {
		a, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		sync := unstructuredString(a.Object, "status", "sync", "status")
		return sync == "Synced" && a.GetAnnotations()[argocd.AnnotationGeneration] == "1"
	})
	waitFor(t, 2*time.Minute, "the hub's views show it applied and deployed", func() bool {
		var list struct {
			Items []struct {
				Observed *struct {
					AppliedGeneration int64 `json:"appliedGeneration"`
				} `json:"observed"`
			} `json:"items"`
		}
		if !getJSON(t, url+"/api/v1/applications?cluster="+cluster+"&name="+name, f.token, &list) || len(list.Items) != 1 {
			return false
		}
		var deps struct {
			Items []struct {
				Revision            string     `json:"revision"`
				RevisionCommittedAt *time.Time `json:"revisionCommittedAt"`
			} `json:"items"`
		}
		return list.Items[0].Observed != nil && list.Items[0].Observed.AppliedGeneration == 1 &&
			getJSON(t, url+"/api/v1/deployments?cluster="+cluster+"&app="+name, f.token, &deps) && len(deps.Items) == 1 && deps.Items[0].Revision == rev &&
			deps.Items[0].RevisionCommittedAt != nil && deps.Items[0].RevisionCommittedAt.Equal(committed)
	})
	if _, err := hubc.Delete(t.Context(), api.KindApplications, cluster, kubetest.ArgoNamespace, name, true, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitGone(t, func() error { _, err := apps.Get(t.Context(), name, metav1.GetOptions{}); return err })
	if _, err := apps.Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Application is still there: %v", err)
	}
	waitFor(t, time.Minute, "the audit history names the calls", func() bool {
		// The projector keeps an API call as an entry of kind "api" named
		// after its action.
		var audit struct {
			Items []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"items"`
		}
		if !getJSON(t, url+"/api/v1/audit?actor=root&limit=1000", f.token, &audit) {
			return false
		}
		seen := map[string]bool{}
		for _, a := range audit.Items {
			if a.Kind == "api" {
				seen[a.Name] = true
			}
		}
		return seen["clusters.register"] && seen["applications.apply"] && seen["applications.delete"]
	})
}

// TestAdoptEndToEnd adopts an Application that a spoke in autonomous mode
// owns, with the real binaries: the argosy-spoke publishes the Application
// created in its cluster, the hub's projector keeps it, `argosy app adopt`
// sends it back as an adoption, and the spoke takes the same object over
// (same uid), after which the hub's change to it applies.
func TestAdoptEndToEnd(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	hubc, _, url := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold",
		"--projector-group", f.prefix + "projector"})
	ns := e.Namespace(t)
	cluster := "edge-" + ns
	reg, err := hubc.RegisterCluster(t.Context(), cluster, api.ClusterRequest{Labels: map[string]string{"env": "edge"}}, api.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startSpoke(t, e, f, url, cluster, reg.JoinToken, "--mode", "autonomous")

	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "local-" + ns
	spec := func(path string) map[string]any {
		return map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "https://git.example.com/local.git", "path": path, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}}
	}
	created, err := apps.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1",
		"kind": "Application", "metadata": map[string]any{"name": name, "labels": map[string]any{"team": "edge"}}, "spec": spec("local")}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the hub's views show what the cluster published", func() bool {
		var list struct {
			Items []struct {
				Observed *struct {
					Local *struct{ Project string } `json:"local"`
				} `json:"observed"`
			} `json:"items"`
		}
		return getJSON(t, url+"/api/v1/applications?cluster="+cluster+"&name="+name, f.token, &list) && len(list.Items) == 1 &&
			list.Items[0].Observed != nil && list.Items[0].Observed.Local != nil
	})

	argosy := filepath.Join(t.TempDir(), "argosy")
	if out, err := exec.Command("go", "build", "-o", argosy, "github.com/argosyproj/argosy/cmd/argosy").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), argosy, "app", "adopt", name, "--cluster", cluster, "--server", url, "--token", f.token)
	cmd.Env = append(os.Environ(), "ARGOSY_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("argosy app adopt: %v\n%s", err, out)
	}
	waitFor(t, 2*time.Minute, "the spoke takes the Application over", func() bool {
		a, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && a.GetLabels()[argocd.LabelManaged] == "true" && a.GetAnnotations()[argocd.AnnotationGeneration] == "1"
	})
	manifest, err := json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": kubetest.ArgoNamespace}, "spec": spec("next")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubc.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{cluster}, Manifest: manifest}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the hub's change applies to the adopted Application", func() bool {
		a, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && unstructuredString(a.Object, "spec", "source", "path") == "next"
	})
	a, err := apps.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.GetUID() != created.GetUID() {
		t.Errorf("the Application was re-created: uid %s, was %s", a.GetUID(), created.GetUID())
	}
}

// startSpoke runs the real argosy-spoke binary for the cluster on the
// real Argo CD until the test ends: it makes its keys and joins with the
// token on first start, trusting the hub's key as keygen wrote it.
func startSpoke(t testing.TB, e *kubetest.Env, f *fixture, hubURL, cluster, token string, args ...string) {
	t.Helper()
	p := spawnSpoke(t, e, f, buildSpoke(t), hubURL, cluster, token, e.Namespace(t), args...)
	t.Cleanup(func() {
		if err := p.Terminate(30 * time.Second); err != nil {
			t.Errorf("%v; log:\n%s", err, p.LogTail())
		}
	})
}

// buildSpoke builds the argosy-spoke binary.
func buildSpoke(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "argosy-spoke")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/argosyproj/argosy/cmd/argosy-spoke").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// spawnSpoke starts bin as the cluster's spoke, keeping its state and
// lease in namespace ns and its keys in the fixture's directory, so that
// a spoke started again is the same spoke. The caller stops it.
func spawnSpoke(t testing.TB, e *kubetest.Env, f *fixture, bin, hubURL, cluster, token, ns string, args ...string) *testproc.Proc {
	t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := testproc.Start(f.dir, "argosy-spoke", bin, append([]string{"run", "--cluster", cluster,
		"--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", f.prefix, "--kubeconfig", e.Kubeconfig,
		"--keys-dir", filepath.Join(f.dir, "spoke-keys"), "--hub-key", filepath.Join(f.dir, cli.PublicKeyFile),
		"--join-token", token, "--hub-url", hubURL, "--namespace", ns, "--lease", "argosy-spoke-" + ns,
		"--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--heartbeat-interval", "1s"}, args...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t testing.TB, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// getJSON reads url with the token into v; false if it did not answer 200.
func getJSON(t *testing.T, url, token string, v any) bool {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(b, v) == nil
}

func unstructuredString(obj map[string]any, path ...string) string {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}
