//go:build integration

package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// timing is what the browser measured of one page load.
type timing struct {
	FCP      float64 `json:"fcp"`      // first contentful paint, ms from navigation start
	Server   float64 `json:"server"`   // request sent to first byte, ms
	Loaded   float64 `json:"loaded"`   // navigation start to the load event's end, ms
	Bytes    float64 `json:"bytes"`    // bytes transferred: the document and every resource not cached
	Requests float64 `json:"requests"` // resources fetched besides the document
}

const measure = `(() => {
	const n = performance.getEntriesByType('navigation')[0];
	const p = performance.getEntriesByName('first-contentful-paint')[0];
	const rs = performance.getEntriesByType('resource');
	const bytes = rs.reduce((s, r) => s + r.transferSize, n.transferSize);
	return {fcp: p ? p.startTime : -1, server: n.responseStart - n.requestStart, loaded: n.loadEventEnd, bytes: bytes, requests: rs.length};
})()`

// TestFleetPageAtScale loads the fleet page of a projector holding 10,000
// clusters and 100,000 Applications in Chromium, and pages through it. It
// reports what it measured (first contentful paint, time to first byte,
// bytes transferred) and checks only what the pages show: timings are
// reported, never asserted.
func TestFleetPageAtScale(t *testing.T) {
	url, _, _ := serveFleet(t, readtest.Large{Clusters: 10000, AppsPerCluster: 10})

	bctx, b := browsertest.New(t)
	pages := []struct {
		name, path, heading string
		rows                int
	}{
		{"first load", "/", "10000 clusters", 50},
		{"page 2", "/?page=2", "10000 clusters", 50},
		{"last page", "/?page=200", "10000 clusters", 50},
		{"filtered env=prod,region=eu", "/?selector=env%3Dprod%2Cregion%3Deu", "1112 clusters", 50},
		{"Stale, by lag", "/?state=Stale&sort=-lag", "1000 clusters", 50},
		{"500 per page", "/?per=500", "10000 clusters", 500},
	}
	for _, p := range pages {
		loadPage(t, bctx, url, scaledPage{"fleet page, " + p.name, p.path, "fleet", "h1 small", p.heading, p.rows})
	}
	for _, p := range []scaledPage{
		{"applications", "/apps", "apps", "h1", "10 across the fleet", 10},
		{"applications, grid by env", "/apps?grid=env", "apps", "h1", "10 across the fleet", 10},
		{"applications, Failed", "/apps?state=Failed", "apps", "h1", "10 across the fleet", 10},
		{"application app-003", "/apps/argocd/app-003", "app-clusters", "h1", "", 50},
		{"application app-003, Stale", "/apps/argocd/app-003?state=Stale", "app-clusters", "h1", "", 50},
	} {
		loadPage(t, bctx, url, p)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// scaledPage is a page of a large fleet: its table's id, and what its
// heading (the element head) says and how many rows the table lists.
type scaledPage struct {
	name, path, table, head, heading string
	rows                             int
}

// loadPage loads p, checks its heading and rows, and logs what the
// browser measured of the load.
func loadPage(t *testing.T, ctx context.Context, base string, p scaledPage) {
	t.Helper()
	var heading string
	var rows int
	var m timing
	if err := chromedp.Run(ctx, chromedp.Navigate(base+p.path), chromedp.WaitVisible("#"+p.table, chromedp.ByID),
		chromedp.Text(p.head, &heading, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#`+p.table+` tbody tr[data-app], #`+p.table+` tbody tr[data-cluster]').length`, &rows)); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	waitLoaded(t, ctx)
	if err := chromedp.Run(ctx, chromedp.Evaluate(measure, &m)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(heading, p.heading) || rows != p.rows {
		t.Errorf("%s: heading %q with %d rows, want %q and %d", p.name, heading, rows, p.heading, p.rows)
	}
	t.Logf("%-40s first contentful paint %5.0f ms, first byte %5.0f ms, loaded %5.0f ms, %4.0f KB in %0.f+1 requests",
		p.name+":", m.FCP, m.Server, m.Loaded, m.Bytes/1024, m.Requests)
}

// waitLoaded waits for the page's load event to have ended and its first
// contentful paint to be recorded.
func waitLoaded(t *testing.T, ctx context.Context) {
	t.Helper()
	for range 100 {
		var done bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(`performance.getEntriesByType('navigation')[0].loadEventEnd > 0 &&
			performance.getEntriesByName('first-contentful-paint').length > 0`, &done)); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the page never finished loading")
}
