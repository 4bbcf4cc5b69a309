//go:build integration

package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/argosyproj/argosy/internal/testenv/browsertest"
)

// axeSource reads the vendored axe-core and checks it against the
// checksum go generate recorded.
func axeSource(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "axe")
	src, err := os.ReadFile(filepath.Join(dir, "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := sha256.Sum256(src)
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if want, name, _ := strings.Cut(sc.Text(), "  "); name == "axe.min.js" {
			if hex.EncodeToString(sum[:]) != want {
				t.Fatal("testdata/axe/axe.min.js is not the file vendor.json pins; run go generate ./hub/web")
			}
			return string(src)
		}
	}
	t.Fatal("testdata/axe/SHA256SUMS has no axe.min.js")
	return ""
}

// view is how a page is looked at: the system's colour scheme and the
// viewport's width.
type view struct {
	name   string
	dark   bool
	narrow bool
}

// views are the four the accessibility check looks at every page in: 390
// px is a common phone's width.
var views = []view{{"light", false, false}, {"dark", true, false}, {"light, 390 px", false, true}, {"dark, 390 px", true, true}}

const narrowWidth = 390

// look makes ctx's tab show pages as v does, for every page it loads
// until the next look.
func look(t *testing.T, ctx context.Context, v view) {
	t.Helper()
	scheme := "light"
	if v.dark {
		scheme = "dark"
	}
	vp := chromedp.EmulateViewport(1400, 900)
	if v.narrow {
		vp = chromedp.EmulateViewport(narrowWidth, 844, chromedp.EmulateMobile)
	}
	media := emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}})
	if err := chromedp.Run(ctx, vp, media); err != nil {
		t.Fatalf("emulating %s: %v", v.name, err)
	}
}

// page is one page the accessibility check loads: its path and a selector
// that is there once the page is drawn.
type page struct{ name, path, ready string }

// runAxe is evaluated in the page: axe-core's every rule but the
// experimental ones, each violation with its nodes.
const runAxe = `axe.run(document).then(r => r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help,
	nodes: v.nodes.map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' '))})))`

// overflow is evaluated in the page: how wide the document is and, when
// it is wider than the viewport, the outermost elements that stick out.
const overflow = `(() => { const w = document.documentElement.clientWidth; const out = [];
	for (const el of document.body.querySelectorAll('*')) {
		if (el.getBoundingClientRect().right > w + 0.5 && !out.some(o => o.contains(el))) { out.push(el) }
	}
	return {scroll: document.documentElement.scrollWidth, client: w,
		out: out.slice(0, 8).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).split(' ').join('.') : '') +
			' right ' + Math.round(el.getBoundingClientRect().right))} })()`

type violation struct {
	ID, Impact, Help string
	Nodes            []string
}

// checkPage loads p and fails t with axe-core's violations there and, on
// a narrow view, with what makes the page wider than the viewport.
func checkPage(t *testing.T, ctx context.Context, url string, p page, v view, axe string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Navigate(url+p.path), chromedp.WaitVisible(p.ready, chromedp.ByQuery)); err != nil {
		t.Fatalf("%s (%s): loading: %v", p.name, v.name, err)
	}
	checkLoaded(t, ctx, p.name+" ("+v.name+")", v, axe)
}

// checkLoaded checks the page ctx's tab shows, as checkPage does.
func checkLoaded(t *testing.T, ctx context.Context, what string, v view, axe string) {
	t.Helper()
	var loaded bool
	eval(t, ctx, `typeof axe !== 'undefined'`, &loaded)
	if !loaded {
		if err := chromedp.Run(ctx, chromedp.Evaluate(axe, nil)); err != nil {
			t.Fatalf("%s: injecting axe-core: %v", what, err)
		}
	}
	var vs []violation
	eval(t, ctx, runAxe, &vs)
	for _, x := range vs {
		t.Errorf("%s: axe %s (%s): %s\n\t%s", what, x.ID, x.Impact, x.Help, strings.Join(x.Nodes, "\n\t"))
	}
	if !v.narrow {
		return
	}
	var w struct {
		Scroll, Client int
		Out            []string
	}
	eval(t, ctx, overflow, &w)
	if w.Scroll > w.Client {
		t.Errorf("%s: the page is %d px wide in a %d px viewport; sticking out:\n\t%s", what, w.Scroll, w.Client, strings.Join(w.Out, "\n\t"))
	}
}

// checkAccessibility checks every page the admin sees, and the login
// page a fresh browser sees, in every view.
func checkAccessibility(t *testing.T, admin, anon context.Context, url string) {
	axe := axeSource(t)
	pages := []page{
		{"fleet", "/", "#fleet"},
		{"cluster", "/clusters/sim-000", "#cluster-state"},
		{"applications", "/apps?grid=env", "#app-grid"},
		{"application", "/apps/argocd/guestbook", "#app-clusters"},
		{"live resources", "/apps/argocd/guestbook/tree?cluster=sim-000", "#tree"},
		{"live diff", "/apps/argocd/guestbook/diff?cluster=sim-000", "#diff"},
		{"audit", "/audit", "#audit"},
		{"placements", "/placements", `#placements tr[data-placement]`},
		{"reports", "/reports?by=cluster", "#chart-note"},
		{"error", "/no-such-page", ".error-page"},
	}
	defer look(t, admin, views[0])
	for _, v := range views {
		look(t, admin, v)
		for _, p := range pages {
			checkPage(t, admin, url, p, v, axe)
		}
		look(t, anon, v)
		checkPage(t, anon, url, page{"login", "/login", "#token"}, v, axe)
		if err := chromedp.Run(anon, chromedp.SendKeys("#token", "not-a-token", chromedp.ByID),
			chromedp.Click("#login", chromedp.ByID), chromedp.WaitVisible("#login-error", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		checkLoaded(t, anon, "refused login ("+v.name+")", v, axe)
	}
	look(t, admin, views[1])
	if err := chromedp.Run(admin, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#fleet", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, admin, "fleet-dark")
	look(t, admin, views[2])
	if err := chromedp.Run(admin, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#fleet", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, admin, "fleet-narrow")
}

// keyOf is a JavaScript function naming a control by what a keyboard user
// meets: its tag, id and accessible label or text. Names outlive the
// Application page's refresh, which replaces its table's elements.
const keyOf = `const keyOf = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' +
	(el.getAttribute('aria-label') || el.textContent.trim().replace(/\s+/g, ' ').slice(0, 40));`

// focused is evaluated in the page: what has the focus, and whether it is
// drawn with an outline.
const focused = `(() => { ` + keyOf + ` const el = document.activeElement; const s = getComputedStyle(el);
	return {key: el === document.body ? '' : keyOf(el), outlined: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0} })()`

// controls is evaluated in the page: the names of the controls a keyboard
// user acts with.
const controls = `(() => { ` + keyOf + ` return [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])')]
	.filter(el => !el.disabled && el.getClientRects().length > 0).map(keyOf) })()`

// tabThrough presses Tab through the page ctx shows and fails t for each
// control the focus never reached, or reached without an outline.
func tabThrough(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var all []string
	eval(t, ctx, controls, &all)
	reached := map[string]bool{}
	for range len(all) + 2 {
		var f struct {
			Key      string
			Outlined bool
		}
		if err := chromedp.Run(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		eval(t, ctx, focused, &f)
		if f.Key != "" && !f.Outlined {
			t.Errorf("%s: %s has the focus and no outline", what, f.Key)
		}
		reached[f.Key] = true
	}
	for _, c := range all {
		if !reached[c] {
			t.Errorf("%s: Tab never reaches %s", what, c)
		}
	}
}

// checkKeyboard follows the skip link, tabs through every page and, on
// the Application page, syncs a cluster with the keyboard alone.
func checkKeyboard(t *testing.T, ctx context.Context, url string) {
	skipLink(t, ctx, url)
	for _, p := range []page{
		{"fleet", "/", "#fleet"},
		{"applications", "/apps", "#apps"},
		{"application", "/apps/argocd/guestbook", "#app-clusters"},
		{"live resources", "/apps/argocd/guestbook/tree?cluster=sim-000", "#tree"},
		{"live diff", "/apps/argocd/guestbook/diff?cluster=sim-000", "#diff"},
		{"audit", "/audit", "#audit"},
		{"placements", "/placements", `#placements tr[data-placement]`},
		{"reports", "/reports?by=cluster", "#chart-note"},
	} {
		if err := chromedp.Run(ctx, chromedp.Navigate(url+p.path), chromedp.WaitVisible(p.ready, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		tabThrough(t, ctx, p.name)
	}
	syncByKeyboard(t, ctx, url)
}

// skipLink checks that the first Tab reaches the skip link, which moves
// the focus to the page's main region.
func skipLink(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	var skip struct{ First, Then string }
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#fleet", chromedp.ByID), chromedp.KeyEvent(kb.Tab),
		chromedp.Evaluate(`document.activeElement.textContent`, &skip.First), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	// The fragment's navigation moves the focus in a task of its own.
	eval(t, ctx, `new Promise(ok => setTimeout(() => ok(document.activeElement.id), 100))`, &skip.Then)
	if skip.First != "Skip to content" || skip.Then != "main" {
		t.Errorf("the first Tab reaches %q and Enter moves the focus to #%s, want the skip link and #main", skip.First, skip.Then)
	}
}

// syncByKeyboard tabs to a Sync button on the Application page, waits
// for the page's refresh and presses Enter.
func syncByKeyboard(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	sync := `document.querySelector('tr[data-cluster="sim-002"] button.op-sync')`
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"/apps/argocd/guestbook"), chromedp.WaitVisible("#app-clusters", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		var on bool
		eval(t, ctx, `document.activeElement === `+sync, &on)
		if on {
			break
		}
		if i == 100 {
			t.Fatal("Tab never reaches sim-002's Sync button")
		}
		if err := chromedp.Run(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
	}
	// The page's live stream replaces the row when it changes: the focus
	// must stay on the button through it. A sync of sim-002 through the
	// API changes the row (its operation).
	var refreshed bool
	eval(t, ctx, `new Promise(ok => {
		document.body.addEventListener('argosy:live', e => { if (e.detail.id === 'r-sim-002' || e.detail.id === 'app-rows') ok(true) });
		fetch('/api/v1/clusters/sim-002/applications/argocd/guestbook/operations', {method: 'POST', credentials: 'same-origin',
			headers: {'X-Argosy-CSRF': document.body.dataset.csrf, 'Content-Type': 'application/json'}, body: JSON.stringify({operation: 'sync'})});
		setTimeout(() => ok(false), 30000) })`, &refreshed)
	var label string
	eval(t, ctx, `document.activeElement.getAttribute('aria-label') || ''`, &label)
	if !refreshed || label != "Sync guestbook on sim-002" {
		t.Fatalf("after the row's live update (%v) the focus is on %q, not sim-002's Sync button", refreshed, label)
	}
	var toast string
	if err := chromedp.Run(ctx, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#toast.show", chromedp.ByQuery),
		chromedp.Text("#toast", &toast, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(toast, "sync requested: event ") {
		t.Errorf("Enter on the Sync button: toast %q", toast)
	}
}
