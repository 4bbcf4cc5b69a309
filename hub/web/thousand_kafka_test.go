//go:build integration

package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// maxPageBytes is what a page may weigh, the document and every resource
// it loads (nothing cached): docs/dashboard.md, "Performance".
const maxPageBytes = 200 * 1024

// fleetOf1000 is the fleet TestDashboardAtThousandClusters looks at: 1,000
// clusters of 5 Applications each, 3 of them placed, bob's reads, and a
// week of deployments.
var fleetOf1000 = readtest.Large{Clusters: 1000, AppsPerCluster: 5, Placed: 3, Reads: 200, Days: 7}

// scalePage is one page TestDashboardAtThousandClusters loads: what is
// there once it is drawn, and what it must show (a JavaScript expression
// that is true); shot names its screenshot in the light view, if any.
type scalePage struct {
	page
	shows, shot string
}

// TestDashboardAtThousandClusters loads every page of the dashboard over
// a store holding 1,000 clusters, in light and dark and at 390 px, and
// checks what each shows, that axe-core finds no violation, and that
// each weighs less than maxPageBytes. It logs each page's first
// contentful paint, which it does not assert.
func TestDashboardAtThousandClusters(t *testing.T) {
	url, store, now := serveFleet(t, fleetOf1000)
	rows := func(sel string, n int) string {
		return fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, sel, n)
	}
	text := func(sel, s string) string {
		return fmt.Sprintf(`document.querySelector(%q).textContent.includes(%q)`, sel, s)
	}
	pages := []scalePage{
		{page{"fleet", "/", "#fleet"}, rows("#fleet tbody tr[data-cluster]", 50) + " && " + text("h1 small", "1000 clusters"), "fleet-1000"},
		{page{"fleet, env=prod,region=eu", "/?selector=env%3Dprod%2Cregion%3Deu", "#fleet"}, text("h1 small", "112 clusters"), ""},
		{page{"cluster", "/clusters/c-00001", "#cluster-state"}, rows("#main table.grid tbody tr", 5), ""},
		{page{"applications", "/apps", "#apps"}, rows("#apps tbody tr[data-app]", 5), ""},
		{page{"applications, grid by env", "/apps?grid=env", "#app-grid"}, rows("#apps tbody tr[data-app]", 5), "applications-1000"},
		{page{"application", "/apps/argocd/app-000", "#app-clusters"}, rows("#app-clusters tbody tr[data-cluster]", 50), "application-1000"},
		{page{"application, Stale", "/apps/argocd/app-000?state=Stale", "#app-clusters"}, rows("#app-clusters tbody tr[data-cluster]", 50), ""},
		{page{"audit", "/audit", "#audit"}, rows("#audit > li.action", 3) + " && " + text("#audit details.entries", "and 982 more"), "audit-1000"},
		{page{"audit, with reads", "/audit?reads=1", "#audit"}, rows("#audit > li.action", 50), ""},
		{page{"placements", "/placements", "#placements tr[data-placement]"}, rows("#placements tr[data-placement]", 3) + " && " + text("#placements tr[data-placement]", "1000 placed"), ""},
		{page{"reports by app", "/reports", "#chart"}, rows("#apps tbody tr", 5), "reports-1000"},
		{page{"reports by cluster", "/reports?by=cluster", "#chart"}, rows("#report tbody tr", 50) + ` && document.querySelector('#next') !== null`, ""},
		{page{"reports of app-000", "/reports?app=argocd%2Fapp-000", "#chart"}, rows("#app-clusters tbody tr", 50), ""},
	}
	bctx, b := browsertest.New(t)
	// Every load fetches every resource, as a first visit does.
	if err := chromedp.Run(bctx, network.Enable(), network.SetCacheDisabled(true)); err != nil {
		t.Fatal(err)
	}
	axe := axeSource(t)
	defer look(t, bctx, views[0])
	for _, v := range views {
		look(t, bctx, v)
		for _, p := range pages {
			what := p.name + " (" + v.name + ")"
			if err := chromedp.Run(bctx, chromedp.Navigate(url+p.path), chromedp.WaitVisible(p.ready, chromedp.ByQuery)); err != nil {
				t.Fatalf("%s: loading: %v", what, err)
			}
			weigh(t, bctx, what, p, v == views[0])
			checkLoaded(t, bctx, what, v, axe)
			switch {
			case v == views[0] && p.shot != "":
				browsertest.Screenshot(t, bctx, p.shot)
			case p.path == "/" && v == views[1]:
				browsertest.Screenshot(t, bctx, "fleet-dark-1000")
			case p.path == "/" && v == views[2]:
				browsertest.Screenshot(t, bctx, "fleet-narrow-1000")
			}
		}
	}
	liveAtScale(t, bctx, url, store, now)
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// liveAtScale opens the fleet page and has c-00009, Stale (readtest.Seed
// makes every tenth cluster's heartbeat ten minutes old), beat again: the
// open page shows it Connected without a reload. It logs how long that
// took from the store's commit, and checks only that it happened.
func liveAtScale(t *testing.T, ctx context.Context, url string, store *sqlstore.Store, now time.Time) {
	t.Helper()
	row := `document.querySelector('#fleet tr[data-cluster="c-00009"]')`
	var stale bool
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#fleet", chromedp.ByID),
		chromedp.Evaluate(`window.argosyMark = 1`, nil), chromedp.Evaluate(row+`.classList.contains('state-stale')`, &stale)); err != nil {
		t.Fatal(err)
	}
	if !stale {
		t.Fatal("c-00009 is not Stale on the fleet page to begin with")
	}
	time.Sleep(2 * time.Second) // past the stream's first sending of every region
	start := time.Now()
	beat := projector.ClusterBeat{Cluster: "c-00009", Seq: 2, At: now, AgentVersion: "v0.3.0", ArgoCDVersion: "v2.14.21", Mode: "managed",
		Applications: fleetOf1000.AppsPerCluster}
	if err := store.Commit(ctx, &projector.Batch{Beats: []projector.ClusterBeat{beat}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := chromedp.Run(ctx, chromedp.Evaluate(row+`.classList.contains('state-connected')`, &stale)); err != nil {
			t.Fatal(err)
		}
		if stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the open fleet page did not show c-00009 Connected within 30 s of its heartbeat")
		}
	}
	t.Logf("the open fleet page showed c-00009's heartbeat %s after its commit", time.Since(start).Round(10*time.Millisecond))
	var mark int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.argosyMark || 0`, &mark)); err != nil || mark != 1 {
		t.Errorf("the fleet page was reloaded (%v)", err)
	}
}

// weigh checks what the page ctx shows, and that it and its resources
// weigh less than maxPageBytes; with logTiming it logs its first
// contentful paint.
func weigh(t *testing.T, ctx context.Context, what string, p scalePage, logTiming bool) {
	t.Helper()
	waitLoaded(t, ctx)
	var shows bool
	var m timing
	if err := chromedp.Run(ctx, chromedp.Evaluate(p.shows, &shows), chromedp.Evaluate(measure, &m)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !shows {
		t.Errorf("%s: the page does not show %s", what, p.shows)
	}
	if m.Bytes >= maxPageBytes {
		t.Errorf("%s: %.0f KB in %.0f+1 requests, want under %d KB", what, m.Bytes/1024, m.Requests, maxPageBytes/1024)
	}
	if logTiming {
		t.Logf("%-30s first contentful paint %5.0f ms, first byte %5.0f ms, loaded %5.0f ms, %4.0f KB in %0.f+1 requests",
			p.name+":", m.FCP, m.Server, m.Loaded, m.Bytes/1024, m.Requests)
	}
}

// serveFleet seeds a store with l, as of now, and serves the dashboard
// over it to an admin, with the hub's placements API answering what the
// hub would of l's placements. It returns the server's URL, the store
// and the time the dashboard's clock stays at.
func serveFleet(t *testing.T, l readtest.Large) (string, *sqlstore.Store, time.Time) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Now()
	l.Now = now
	start := time.Now()
	if err := readtest.Seed(ctx, store, l); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d clusters of %d Applications with their history in %s", l.Clusters, l.AppsPerCluster, time.Since(start).Round(time.Millisecond))
	h, err := web.New(store, web.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/static/", http.StripPrefix("/static", web.Static()))
	mux.HandleFunc("GET /api/v1/placements", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(placementsOf(l, r.URL.Query().Get("clusters") == "false")); err != nil {
			t.Error(err)
		}
	})
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "admin", Role: "admin", CanWrite: true, CSRF: "x"})))
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, store, now
}

// placementsOf is the hub's list of l's placements (readtest.SeedHistory):
// generation 2 of argocd/app-NNN on every cluster; brief, without the
// clusters (clusters=false).
func placementsOf(l readtest.Large, brief bool) api.PlacementList {
	out := api.PlacementList{Items: []api.Placement{}}
	for a := range l.Placed {
		name := fmt.Sprintf("app-%03d", a)
		p := api.Placement{Namespace: "argocd", Name: name, Generation: 2, Prune: "delete", Project: "default",
			States: map[string]int{"placed": l.Clusters},
			Manifest: json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"` + name + `","namespace":"argocd"},` +
				`"spec":{"project":"default","source":{"repoURL":"https://git.example.com/apps.git","path":"guestbook","targetRevision":"v2"},` +
				`"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"}}}`)}
		for c := range l.Clusters {
			if brief {
				break
			}
			p.Clusters = append(p.Clusters, api.PlacedCluster{Cluster: fmt.Sprintf("c-%05d", c), Matches: true, Generation: 2,
				PlacementGeneration: 2, State: "placed"})
		}
		out.Items = append(out.Items, p)
	}
	return out
}
