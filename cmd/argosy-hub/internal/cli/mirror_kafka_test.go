//go:build integration

package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/mirror"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// TestMirrorIntoArgoCD runs the real mirror (argosy-hub mirror, with a
// viewer's token) beside a real hub, broker and spoke, into a cluster whose
// Argo CD controller watches the mirror's namespaces. The Application the
// spoke's Argo CD synced appears in its cluster's namespace with the
// status, revision, history and resources the spoke reported. The controller leaves
// it alone. Neither the mirror's rounds, nor its restart, nor deleting
// its namespace append a config event or touch the cluster's own
// Application; a restarted mirror writes nothing that did not change; an
// Application deleted through the hub leaves the mirror.
func TestMirrorIntoArgoCD(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	viewer := f.newToken("mirror", "viewer")
	a := syncedApp(t, e, f, "m-", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	hubc, url, cluster, name, commit, dyn, spokeApps := a.hub, a.url, a.cluster, a.name, a.commit, a.dyn, a.spokeApps

	tokenFile := filepath.Join(f.dir, "mirror-token")
	if err := os.WriteFile(tokenFile, []byte(viewer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mirrorNS := "mirror-" + cluster
	mirrored := dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	server, err := e.StartArgoCDServer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	proxy, m := f.startMirrorProxy(e, url, tokenFile, server)
	got := waitMirrored(t, mirrored, name, commit)
	for k, want := range map[string]string{mirror.AnnotationSkipReconcile: "true", mirror.AnnotationOwner: mirror.OwnerHub,
		mirror.AnnotationNamespace: kubetest.ArgoNamespace} {
		if v := got.GetAnnotations()[k]; v != want {
			t.Errorf("annotation %s = %q, want %q", k, v, want)
		}
	}
	if v := got.GetLabels()[mirror.LabelCluster]; v != cluster {
		t.Errorf("label %s = %q, want %q", mirror.LabelCluster, v, cluster)
	}
	// The resources list, as the cluster's Argo CD has it, through the
	// spoke's reports.
	res, _, _ := unstructured.NestedSlice(got.Object, "status", "resources")
	if len(res) != 1 || fmt.Sprint(res[0]) != fmt.Sprintf("map[kind:ConfigMap name:demo namespace:%s status:Synced version:v1]", a.ns) {
		t.Errorf("status.resources %v, want the ConfigMap demo, Synced", res)
	}
	stockArgoCDAnswers(t, e, server, mirrorNS, name, a.ns)
	proxyAnswers(t, proxy, mirrorNS, name)
	stockCLIThroughProxy(t, e, a, proxy, mirrored, mirrorNS, name)
	configAt := configEnd(t, f)

	// Ask the mirror cluster's controller for a hard refresh, which it acts
	// on and clears at once for an Application it reconciles; past two of
	// its resyncs, the request is still there and the status is the
	// mirror's.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"hard"}}}`, "argocd.argoproj.io/refresh")
	if _, err := mirrored.Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(25 * time.Second)
	after, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.GetAnnotations()["argocd.argoproj.io/refresh"]; !ok {
		t.Error("the mirror cluster's Argo CD reconciled the mirrored Application: it took the refresh")
	}
	if v, ok, _ := unstructured.NestedString(after.Object, "status", "controllerNamespace"); ok {
		t.Errorf("the mirror cluster's Argo CD wrote the status (controllerNamespace %q)", v)
	}

	// A mirror started again writes nothing that did not change.
	if err := m.Terminate(10 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, m.LogTail())
	}
	f.startMirror(e, url, tokenFile)
	waitFor(t, time.Minute, "the restarted mirror's first round", func() bool { return metric(t, f, "mirror", "argosy_mirror_rounds_total", "") >= 1 })
	if n := metric(t, f, "mirror", "argosy_mirror_objects_total", `outcome="written"`); n != 0 {
		t.Errorf("the restarted mirror wrote %v Applications again, want 0", n)
	}
	again, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.GetResourceVersion() != after.GetResourceVersion() {
		t.Errorf("the restarted mirror rewrote the Application (resourceVersion %s, was %s)", again.GetResourceVersion(), after.GetResourceVersion())
	}

	// Deleting the mirror's namespace deletes nothing on the cluster: the
	// mirror makes it again.
	namespaces := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if err := namespaces.Delete(t.Context(), mirrorNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the namespace to go", func() bool {
		got, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && got.GetUID() != after.GetUID())
	})
	waitMirrored(t, mirrored, name, commit)
	if _, err := spokeApps.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("the cluster's Application after its mirror namespace was deleted: %v", err)
	}
	if now := configEnd(t, f); now != configAt {
		t.Errorf("the config topic's end offsets moved from %d to %d while the mirror ran", configAt, now)
	}

	if _, err := hubc.Delete(t.Context(), api.KindApplications, cluster, kubetest.ArgoNamespace, name, true, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the deleted Application to leave the mirror", func() bool {
		_, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// stockArgoCDAnswers asks the stock Argo CD API server, with its own CLI,
// for the mirrored Application ns/name: it lists it, and gets it with the
// status and resources the mirror wrote.
func stockArgoCDAnswers(t *testing.T, e *kubetest.Env, server, ns, name, appNS string) {
	t.Helper()
	argocd := func(args ...string) []byte {
		t.Helper()
		out, stderr, err := argocdCLI(t, e, server, args...)
		if err != nil {
			t.Fatalf("argocd %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
	}
	if list := string(argocd("app", "list", "-o", "name")); !strings.Contains(list, ns+"/"+name) {
		t.Errorf("argocd app list:\n%s\nwant %s/%s", list, ns, name)
	}
	var app struct {
		Status struct {
			Sync      struct{ Status string }
			Health    struct{ Status string }
			Resources []struct{ Kind, Name, Namespace, Status string }
		}
	}
	if err := json.Unmarshal(argocd("app", "get", ns+"/"+name, "-o", "json"), &app); err != nil {
		t.Fatal(err)
	}
	if app.Status.Sync.Status != "Synced" || app.Status.Health.Status != "Healthy" || len(app.Status.Resources) != 1 ||
		app.Status.Resources[0].Kind != "ConfigMap" || app.Status.Resources[0].Namespace != appNS {
		t.Errorf("argocd app get %s/%s: %+v, want Synced, Healthy, its ConfigMap", ns, name, app.Status)
	}
}

// argocdCLI runs the stock argocd CLI against the API server (or a proxy
// of it) at server, in clear text: its output, its standard error and how
// it exited. A call that takes a minute is ended.
func argocdCLI(t *testing.T, e *kubetest.Env, server string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	return argocdCLIAs(t, e, server, "none", args...)
}

// argocdCLIAs is argocdCLI with a session's token.
func argocdCLIAs(t *testing.T, e *kubetest.Env, server, token string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a call left to the controller waits
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Bin.ArgoCD, append([]string{"--server", server, "--plaintext", "--auth-token", token,
		"--config", filepath.Join(t.TempDir(), "config")}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	return out, errb.Bytes(), err
}

// stockCLIThroughProxy runs the stock argocd CLI against the mirror's
// proxy: its gRPC calls for the mirrored Application ns/name's resources
// and diff are answered from the cluster (the API server would wait for
// its controller), the rest go on to the API server. The diff shows
// nothing as synced, and the ConfigMap demo in appNS edited on the
// cluster; the edit is then undone, and the mirrored status is Synced
// again.
func stockCLIThroughProxy(t *testing.T, e *kubetest.Env, a liveApp, proxy string, mirrored dynamic.ResourceInterface, ns, name string) {
	t.Helper()
	out, stderr, err := argocdCLI(t, e, proxy, "app", "resources", ns+"/"+name)
	if err != nil || !regexp.MustCompile(`(?m)^\s*ConfigMap\s+`+a.ns+`\s+demo\s+No\s*$`).Match(out) {
		t.Errorf("argocd app resources through the proxy: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := argocdCLI(t, e, proxy, "app", "diff", ns+"/"+name); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("argocd app diff through the proxy, as synced: %v\n%s%s", err, out, stderr)
	}
	configMaps := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(a.ns)
	edit := func(v string) {
		t.Helper()
		if _, err := configMaps.Patch(t.Context(), "demo", types.MergePatchType, []byte(`{"data":{"v":"`+v+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edit("edited on the cluster")
	out, stderr, err = argocdCLI(t, e, proxy, "app", "diff", ns+"/"+name)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "/ConfigMap "+a.ns+"/demo") ||
		!strings.Contains(string(out), "edited on the cluster") {
		t.Errorf("argocd app diff through the proxy, the ConfigMap edited: %v\n%s%s", err, out, stderr)
	}
	edit("one")
	waitFor(t, 2*time.Minute, "the mirrored Application Synced again", func() bool {
		got, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		s, _, _ := unstructured.NestedString(got.Object, "status", "sync", "status")
		return s == "Synced"
	})
}

// proxyAnswers calls the mirror's proxy of the Argo CD API server as its UI
// does, for the mirrored Application ns/name, whose resource tree, diff
// and live manifest the API server alone would wait for until the call
// timed out: the proxy answers them from the cluster, passes the rest on,
// and passes on the API server's answer about an Application it does not
// have.
func proxyAnswers(t *testing.T, proxy, ns, name string) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + proxy + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	app := "/api/v1/applications/" + name
	q := "?appNamespace=" + ns
	var tree struct{ Nodes []struct{ Kind, Name string } }
	if status, body := get(app + "/resource-tree" + q); status != http.StatusOK || json.Unmarshal([]byte(body), &tree) != nil ||
		len(tree.Nodes) != 1 || tree.Nodes[0].Kind != "ConfigMap" || tree.Nodes[0].Name != "demo" {
		t.Errorf("resource tree through the proxy: %d %s", status, body)
	}
	var diff struct {
		Items []struct {
			Kind     string
			Modified bool
		}
	}
	if status, body := get(app + "/managed-resources" + q); status != http.StatusOK || json.Unmarshal([]byte(body), &diff) != nil ||
		len(diff.Items) != 1 || diff.Items[0].Kind != "ConfigMap" || diff.Items[0].Modified {
		t.Errorf("managed resources through the proxy: %d %s", status, body)
	}
	var res struct{ Manifest string }
	if status, body := get(app + "/resource" + q + "&namespace=" + strings.TrimPrefix(ns, "mirror-m-") +
		"&resourceName=demo&version=v1&kind=ConfigMap"); status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil ||
		!strings.Contains(res.Manifest, `"name":"demo"`) {
		t.Errorf("live manifest through the proxy: %d %s", status, body)
	}
	if status, body := get("/api/v1/applications" + q); status != http.StatusOK || !strings.Contains(body, `"name":"`+name+`"`) {
		t.Errorf("the Applications, passed on: %d %.300s", status, body)
	}
	if status, _ := get("/api/v1/applications/no-such-app/resource-tree" + q); status == http.StatusOK || status == http.StatusGatewayTimeout {
		t.Errorf("the tree of an Application the API server does not have: %d, want its refusal", status)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+proxy+"/api/v1/stream/applications/"+name+"/resource-tree"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, `data: {"result":{"nodes":[`) || !strings.Contains(line, `"name":"demo"`) {
		t.Errorf("the tree's stream through the proxy: %q, %v", line, err)
	}
}

// waitMirrored waits for the mirrored Application to carry the spoke's
// status at revision, with its history, and returns it.
func waitMirrored(t testing.TB, mirrored dynamic.ResourceInterface, name, revision string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	waitFor(t, 2*time.Minute, "the Application mirrored with its status", func() bool {
		a, err := mirrored.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		history, _, _ := unstructured.NestedSlice(a.Object, "status", "history")
		got = a
		return unstructuredString(a.Object, "status", "sync", "status") == "Synced" &&
			unstructuredString(a.Object, "status", "sync", "revision") == revision &&
			unstructuredString(a.Object, "status", "health", "status") == "Healthy" &&
			len(history) > 0 && unstructuredString(history[len(history)-1].(map[string]any), "revision") == revision
	})
	return got
}

// newToken adds a bearer token with role to the fixture's tokens file and
// returns it.
func (f *fixture) newToken(name, role string) string {
	f.t.Helper()
	out := &capture{}
	root := cli.NewRoot(cmdkit.IOStreams{Out: out, Err: new(discard)})
	root.SetArgs([]string{"token", "new", name, "--role", role, "--file", filepath.Join(f.dir, "tokens.yaml")})
	if err := root.ExecuteContext(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
	return out.line()
}

// startMirror runs argosy-hub mirror into e's cluster, its namespaces
// prefixed "mirror-" as the test Argo CD watches them.
func (f *fixture) startMirror(e *kubetest.Env, hubURL, tokenFile string, extra ...string) *testproc.Proc {
	f.t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		f.t.Fatal(err)
	}
	f.metrics["mirror"] = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	p, err := testproc.Start(f.dir, "mirror", f.bin, append([]string{"mirror", "--hub-url", hubURL, "--token-file", tokenFile,
		"--kubeconfig", e.Kubeconfig, "--namespace-prefix", strings.TrimSuffix(kubetest.MirrorNamespaces, "*"),
		"--interval", "500ms", "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[0])}, extra...), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			f.t.Logf("mirror: %v\n%s", err, p.LogTail())
		}
	})
	return p
}

// startMirrorProxy starts the mirror as startMirror does, with its UI
// proxy of the Argo CD API server at argocd, and returns the proxy's
// address. The mirror's log is shown if the test fails.
func (f *fixture) startMirrorProxy(e *kubetest.Env, hubURL, tokenFile, argocd string) (string, *testproc.Proc) {
	f.t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		f.t.Fatal(err)
	}
	proxy := fmt.Sprintf("127.0.0.1:%d", ports[0])
	m := f.startMirror(e, hubURL, tokenFile, "--ui-proxy-address", proxy, "--argocd-server", "http://"+argocd)
	f.t.Cleanup(func() {
		if f.t.Failed() {
			f.t.Logf("the mirror's log:\n%s", m.LogTail())
		}
	})
	return proxy, m
}

// configEnd is the sum of the end offsets of the fixture's config topic.
func configEnd(t *testing.T, f *fixture) int64 {
	t.Helper()
	ends, err := kadm.NewClient(kafkatest.Client(t)).ListEndOffsets(t.Context(), f.topics[events.TopicConfig])
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum
}

// metric sums the samples of the named process's metric family whose
// labels hold label (as `key="value"`); 0 when it does not answer.
func metric(t *testing.T, f *fixture, name, family, label string) float64 {
	// label is one or more name="value", comma-separated, each of which
	// the series must have.
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.metrics[name]+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, family+"{") || !hasLabels(line, label) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// hasLabels says whether a series' line has each of labels'
// comma-separated name="value" pairs.
func hasLabels(line, labels string) bool {
	for _, l := range strings.Split(labels, ",") {
		if !strings.Contains(line, l) {
			return false
		}
	}
	return true
}
