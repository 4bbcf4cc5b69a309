//go:build integration && argocdui

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// EnvArgoCDUI names a build of Argo CD's web UI (the ui/dist/app of its
// sources: index.html and its bundles) for TestStockArgoCDUIShowsTheFleet.
const EnvArgoCDUI = "ARGOSY_ARGOCD_UI"

// TestStockArgoCDUIShowsTheFleet opens the stock Argo CD web UI, served
// by a real Argo CD API server behind the mirror's UI proxy, in Chromium:
// the applications page lists the fleet's mirrored Applications, each
// Synced and Healthy as its cluster's agent reported; an Application's
// page draws its resource tree, whose calls the proxy answered from the
// cluster through the hub; a resource's live manifest opens. With
// ARGOSY_SCREENSHOTS set, it saves each page there (docs/screenshots).
//
// It needs the UI built (EnvArgoCDUI), which make test cannot do on its
// own: see docs/testing.md. make test-argocd-ui runs it.
func TestStockArgoCDUIShowsTheFleet(t *testing.T) {
	assets := os.Getenv(EnvArgoCDUI)
	if _, err := os.Stat(filepath.Join(assets, "index.html")); assets == "" || err != nil {
		t.Fatalf("%s must name a build of Argo CD's web UI, the directory of its index.html (docs/testing.md): %q, %v", EnvArgoCDUI, assets, err)
	}
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	viewer := f.newToken("ui-mirror", "viewer")
	a := syncedApp(t, e, f, "prod-", map[string]string{
		"app/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  greeting: hello from the cluster\n",
		"app/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: demo\nspec:\n  ports:\n  - port: 80\n",
		"app/sa.yaml":  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: demo\n",
		"web/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  listen: \":8080\"\n",
	})
	// A second Application on the cluster, of the repository's web/.
	second := json.RawMessage(strings.Replace(strings.Replace(string(a.manifest), `"path":"app"`, `"path":"web"`, 1),
		fmt.Sprintf(`"name":%q`, a.name), `"name":"web"`, 1))
	if _, err := a.hub.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{a.cluster}, Manifest: second},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrorNS := "mirror-" + a.cluster
	tokenFile := filepath.Join(f.dir, "mirror-token")
	if err := os.WriteFile(tokenFile, []byte(viewer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server, err := e.StartArgoCDUI(t.Context(), assets)
	if err != nil {
		t.Fatal(err)
	}
	proxy, _ := f.startMirrorProxy(e, a.url, tokenFile, server)
	mirrored := a.dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	waitMirrored(t, mirrored, a.name, a.commit)
	waitMirrored(t, mirrored, "web", a.commit)

	inspected := func() float64 {
		return metric(t, f, "hub", "argosy_hub_requests_total", `action="applications.inspect",code="200"`)
	}
	before := inspected()
	ctx, browser := browsertest.New(t)
	// The page's calls that failed, and, if the test fails, those that
	// never ended (a call the API server answers only from its
	// controller's cache waits for a refresh that never comes).
	var mu sync.Mutex
	pending := map[network.RequestID]string{}
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch r := ev.(type) {
		case *network.EventRequestWillBeSent:
			pending[r.RequestID] = r.Request.URL
		case *network.EventLoadingFinished:
			delete(pending, r.RequestID)
		case *network.EventLoadingFailed:
			t.Logf("the page's call failed: %s: %s", pending[r.RequestID], r.ErrorText)
			delete(pending, r.RequestID)
		case *network.EventResponseReceived:
			if r.Response.Status >= 400 {
				t.Logf("the page's call was answered %d: %s", r.Response.Status, r.Response.URL)
			}
		}
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, u := range pending {
			t.Logf("a call of the page never ended: %s", u)
		}
		t.Logf("the browser's errors: %q", browser.Errors())
	})
	_ = chromedp.Run(ctx, network.Enable())
	ui := "http://" + proxy
	waitText := func(what, selector string, want ...string) {
		t.Helper()
		var text string
		deadline := time.Now().Add(2 * time.Minute)
		for {
			// Monaco, the manifest's editor, writes its spaces as
			// no-break spaces.
			_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.innerText).join("\n").replaceAll("\u00a0", " ")`, selector), &text))
			missing := ""
			for _, w := range want {
				if !strings.Contains(text, w) {
					missing = w
				}
			}
			if missing == "" {
				return
			}
			if time.Now().After(deadline) {
				var page string
				_ = chromedp.Run(ctx, chromedp.Evaluate(`location.href + "\n" + document.body.innerText`, &page))
				t.Fatalf("%s: %q never showed in %s; the page shows:\n%s", what, missing, selector, page)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// The mirror's Applications, by the label it gives them (in this
	// test the API server's cluster is the spoke's too, whose own
	// Application the page would show beside them).
	if err := chromedp.Run(ctx, chromedp.Navigate(ui+"/applications?labels="+url.QueryEscape("app.kubernetes.io/managed-by=argosy-mirror"))); err != nil {
		t.Fatal(err)
	}
	waitText("the applications page", ".applications-list", a.name, "web", "Synced", "Healthy")
	time.Sleep(time.Second) // the tiles' icons settle
	browsertest.Screenshot(t, ctx, "argocd-ui-applications")

	if err := chromedp.Run(ctx, chromedp.Navigate(fmt.Sprintf("%s/applications/%s/%s?view=tree&resource=", ui, mirrorNS, a.name))); err != nil {
		t.Fatal(err)
	}
	waitText("the resource tree", ".application-resource-tree", a.name, "demo")
	var kinds string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll(".application-resource-tree__node-kind")].map(e => e.innerText).join(",")`, &kinds)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cm", "svc", "sa"} {
		if !strings.Contains(","+kinds+",", ","+k+",") {
			t.Errorf("the tree's nodes are of kinds %q, want a %s", kinds, k)
		}
	}
	time.Sleep(time.Second)
	dismissNotices(t, ctx)
	browsertest.Screenshot(t, ctx, "argocd-ui-tree")
	if after := inspected(); after <= before {
		t.Errorf("the hub answered %v live questions while the UI drew the tree, want some: the UI's calls did not reach the clusters through the proxy", after-before)
	}

	// A resource's live manifest, from the cluster.
	node := fmt.Sprintf("/ConfigMap/%s/demo/0", a.ns)
	if err := chromedp.Run(ctx, chromedp.Navigate(fmt.Sprintf("%s/applications/%s/%s?view=tree&resource=&node=%s&tab=summary", ui, mirrorNS, a.name, node))); err != nil {
		t.Fatal(err)
	}
	waitText("the live manifest", ".sliding-panel", "hello from the cluster")
	time.Sleep(time.Second)
	dismissNotices(t, ctx)
	browsertest.Screenshot(t, ctx, "argocd-ui-manifest")
}

// dismissNotices closes the page's notices, after logging them. Here the
// one there is says the API server could not read the commit's metadata
// (author, message) from the test's repository: its repo server reads a
// file:// repository for syncs, not for that (docs/mirror.md).
func dismissNotices(t *testing.T, ctx context.Context) {
	t.Helper()
	var notices string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => { const t = [...document.querySelectorAll(".Toastify__toast")].map(e => e.innerText).join("\n");`+
		`document.querySelectorAll(".Toastify__close-button").forEach(b => b.click()); return t; })()`, &notices)); err != nil {
		t.Fatal(err)
	}
	if notices != "" {
		t.Logf("the page's notices, closed: %s", notices)
		time.Sleep(time.Second) // they fade
	}
}
