//go:build integration

package cli_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestArgoCDUsersChangeThroughTheProxy runs the real mirror's UI proxy in
// front of a real Argo CD API server with logins and RBAC on, beside a
// real hub, broker, spoke and Argo CD. Users logged in to that Argo CD
// change a mirrored Application with the stock argocd CLI (gRPC) and the
// UI's REST API, through the proxy:
//   - mallory, whom Argo CD's RBAC lets only read, asks a sync: refused by
//     Argo CD's RBAC, nothing relayed;
//   - bob, whom Argo CD's RBAC lets sync but the mirror's token grants only
//     viewer for, asks a sync: refused with the hub's words;
//   - neither appends a config record; the hub's refusal of bob's is
//     written on the mirrored Application as a condition;
//   - alice (deployer) syncs: the cluster's Argo CD runs it once; her
//     spec edit (argocd app set) and patch (argocd app patch) reach the
//     cluster's Application; she refreshes with argocd app get --refresh
//     and through the UI's REST API; the audit names argocd:alice
//     via the mirror's token; her delete takes the Application off the
//     cluster.
func TestArgoCDUsersChangeThroughTheProxy(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	token := f.newToken("mirror", "viewer")
	f.grant("mirror", []auth.KubernetesGrant{{ArgoCDUser: "alice", Role: auth.RoleDeployer}, {ArgoCDUser: "bob", Role: auth.RoleViewer},
		{User: "alice", Role: auth.RoleAdmin}}) // a Kubernetes user of the same name counts for nothing here
	a := syncedApp(t, e, f, "u-", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n",
		"web/deploy.yaml": deploymentYAML})
	tokenFile := filepath.Join(f.dir, "mirror-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const password = "correct horse battery"
	server, err := e.StartArgoCDServerWithLogin(t.Context(), map[string]string{"alice": password, "bob": password, "mallory": password},
		"p, role:ops, applications, *, *, allow\np, role:ops, projects, get, *, allow\np, role:ops, logs, get, *, allow\n"+
			"p, role:reader, applications, get, *, allow\n"+
			"g, alice, role:ops\ng, bob, role:ops\ng, mallory, role:reader\n")
	if err != nil {
		t.Fatal(err)
	}
	proxy, _ := f.startMirrorProxy(e, a.url, tokenFile, server)
	mirrorNS := "mirror-" + a.cluster
	waitMirrored(t, a.dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS), a.name, a.commit)
	tokens := map[string]string{}
	for _, u := range []string{"alice", "bob", "mallory"} {
		if tokens[u], err = kubetest.ArgoCDLogin(t.Context(), server, u, password); err != nil {
			t.Fatal(err)
		}
	}
	app := mirrorNS + "/" + a.name
	history := func() int {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := unstructured.NestedSlice(got.Object, "status", "history")
		return len(h)
	}
	before, configAt := history(), configEnd(t, f)

	for user, want := range map[string]string{
		"mallory": "Argo CD's RBAC does not let mallory sync applications",
		"bob":     "role viewer",
	} {
		out, stderr, err := argocdCLIAs(t, e, proxy, tokens[user], "app", "sync", app, "--async")
		if err == nil || !strings.Contains(string(stderr), want) {
			t.Errorf("%s's sync: %v\n%s%s\nwant refused: %s", user, err, out, stderr, want)
		}
	}
	if now := configEnd(t, f); now != configAt {
		t.Errorf("refused changes moved the config topic's end offsets from %d to %d", configAt, now)
	}
	waitRefusedCondition(t, a.dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS), a.name, "argocd:bob's sync was refused")

	if out, stderr, err := argocdCLIAs(t, e, proxy, tokens["alice"], "app", "sync", app, "--async"); err != nil {
		t.Fatalf("alice's sync: %v\n%s%s", err, out, stderr)
	}
	waitFor(t, 2*time.Minute, "the cluster's Argo CD to run alice's sync", func() bool { return history() == before+1 })
	time.Sleep(5 * time.Second)
	if n := history(); n != before+1 {
		t.Errorf("the cluster's history grew by %d, want the one sync", n-before)
	}

	// A spec edit, as argocd app set makes it (UpdateSpec).
	if out, stderr, err := argocdCLIAs(t, e, proxy, tokens["alice"], "app", "set", app, "--revision-history-limit", "5"); err != nil {
		t.Fatalf("alice's spec edit: %v\n%s%s", err, out, stderr)
	}
	waitFor(t, 2*time.Minute, "alice's spec edit on the cluster's Application", func() bool {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		n, _, _ := unstructured.NestedInt64(got.Object, "spec", "revisionHistoryLimit")
		return err == nil && n == 5
	})

	// A patch, as argocd app patch makes it, and a refresh, as argocd app
	// get --refresh asks it. The patch is made at the generation mirrored:
	// made before the mirror shows the spec edit, it would be a 409.
	mirrored := a.dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	waitFor(t, time.Minute, "the mirror to show the spec edit's generation", func() bool {
		got, err := mirrored.Get(t.Context(), a.name, metav1.GetOptions{})
		n, _, _ := unstructured.NestedInt64(got.Object, "spec", "revisionHistoryLimit")
		return err == nil && n == 5
	})
	if out, stderr, err := argocdCLIAs(t, e, proxy, tokens["alice"], "app", "patch", app, "--type", "merge",
		"--patch", `{"spec":{"revisionHistoryLimit":6}}`); err != nil {
		t.Fatalf("alice's patch: %v\n%s%s", err, out, stderr)
	}
	waitFor(t, 2*time.Minute, "alice's patch on the cluster's Application", func() bool {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		n, _, _ := unstructured.NestedInt64(got.Object, "spec", "revisionHistoryLimit")
		return err == nil && n == 6
	})
	if out, stderr, err := argocdCLIAs(t, e, proxy, tokens["alice"], "app", "get", app, "--refresh", "-o", "json"); err != nil {
		t.Fatalf("alice's refresh: %v\n%s%s", err, out, stderr)
	}

	// The UI's REST API, with its session cookie: a refresh.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		"http://"+proxy+"/api/v1/applications/"+a.name+"?appNamespace="+mirrorNS+"&refresh=normal", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "argocd.token", Value: tokens["alice"]})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("alice's refresh through the UI's API: %s", resp.Status)
	}

	// A Deployment's Pods' log, as the UI's logs tab of the Deployment
	// asks it, for the Argo CD user: mallory may not get logs in Argo CD,
	// bob may there and not in the hub (a viewer); alice reads the lines
	// the filter keeps, from the cluster's kubelet, through the hub and
	// the spoke.
	webApp, _ := deploymentApp(t, e, a)
	waitFor(t, 2*time.Minute, "the Deployment's Application mirrored", func() bool {
		_, err := mirrored.Get(t.Context(), webApp, metav1.GetOptions{})
		return err == nil
	})
	logs := func(user string) ([]byte, []byte, error) {
		return argocdCLIAs(t, e, proxy, tokens[user], "app", "logs", mirrorNS+"/"+webApp, "--group", "apps", "--kind", "Deployment", "--name", "web",
			"--namespace", a.ns, "--filter", "GET")
	}
	var out, stderr []byte
	// The Pod joins the Deployment's tree once the spoke's Argo CD lists
	// the Deployment among the Application's resources.
	waitFor(t, time.Minute, "alice's argocd app logs of the Deployment", func() bool {
		out, stderr, err = logs("alice")
		return err == nil && len(out) > 0
	})
	if string(out) != "GET /\nGET /health\n" {
		t.Errorf("alice's argocd app logs of the Deployment: %v\n%s%s", err, out, stderr)
	}
	for user, want := range map[string]string{
		"mallory": "Argo CD's RBAC does not let mallory get logs",
		"bob":     "role viewer",
	} {
		if out, stderr, err := logs(user); err == nil || len(out) != 0 || !strings.Contains(string(stderr), want) {
			t.Errorf("%s's argocd app logs: %v\n%s%s\nwant refused: %s", user, err, out, stderr, want)
		}
	}

	waitFor(t, time.Minute, "the audit to name argocd:alice via the mirror for each change and the log question", func() bool {
		var audit struct {
			Items []struct {
				Kind, Name, Via, Outcome string
			} `json:"items"`
		}
		if !getJSON(t, a.url+"/api/v1/audit?actor=argocd:alice&limit=100", f.token, &audit) {
			return false
		}
		n := map[string]int{}
		for _, it := range audit.Items {
			if it.Kind == "api" && it.Via == "mirror" {
				n[it.Name]++
			}
		}
		// The sync and two refreshes; the spec edit and the patch.
		return n["applications.operate"] == 3 && n["applications.apply"] == 2 && n["applications.logs"] >= 1
	})

	if out, stderr, err := argocdCLIAs(t, e, proxy, tokens["alice"], "app", "delete", app, "--yes"); err != nil {
		t.Fatalf("alice's delete: %v\n%s%s", err, out, stderr)
	}
	waitFor(t, 2*time.Minute, "the Application to leave the cluster", func() bool {
		_, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for labels, want := range map[string]float64{`operation="sync",outcome="refused"`: 2, `operation="sync",outcome="relayed"`: 1,
		`operation="refresh",outcome="relayed"`: 2, `operation="delete",outcome="relayed"`: 1, `operation="spec",outcome="relayed"`: 2} {
		if n := metric(t, f, "mirror", "argosy_mirror_ui_proxy_changes_total", labels); n != want {
			t.Errorf("argosy_mirror_ui_proxy_changes_total{%s} = %v, want %v", labels, n, want)
		}
	}
}
