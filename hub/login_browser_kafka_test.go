//go:build integration

package hub_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// offSite are next pages a browser reads as another host: it drops tabs
// and newlines anywhere in a URL and takes a backslash for a slash.
var offSite = []string{"/\t/evil.example", "/\n/evil.example", "/\\evil.example", "//evil.example", "https://evil.example/"}

// TestLoginStaysOnTheHub logs Chromium in with the token form, from a
// login link whose next page would send it to another host: each time
// it lands on the hub's own fleet page.
func TestLoginStaysOnTheHub(t *testing.T) {
	r := newRig(t, 1)
	dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	base := r.start(hub.WithDashboard(dash))
	b, _ := browsertest.New(t)
	for _, next := range offSite {
		if err := chromedp.Run(b, chromedp.Navigate(base+"/login?next="+url.QueryEscape(next)),
			chromedp.WaitVisible("#token", chromedp.ByID), chromedp.SendKeys("#token", r.tokens["root"], chromedp.ByID),
			chromedp.Click("#login", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		href := leftLogin(t, b)
		if !strings.HasPrefix(href, base+"/") {
			t.Errorf("next %q: the browser went to %s, off the hub at %s", next, href, base)
		}
		if strings.HasPrefix(href, base+"/") {
			logout(t, b)
		}
	}
}

// leftLogin waits until the browser has left the login page and returns
// where it went.
func leftLogin(t *testing.T, b context.Context) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var href string
		if err := chromedp.Run(b, chromedp.Evaluate(`location.href`, &href)); err == nil && !strings.Contains(href, "/login") {
			return href
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser stayed on the login page")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logout ends the browser's session from the page it is on.
func logout(t *testing.T, b context.Context) {
	t.Helper()
	var status int
	if err := chromedp.Run(b, chromedp.Evaluate(`fetch('/logout', {method: 'POST'}).then(r => r.status)`, &status,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil || status != 200 {
		t.Fatalf("logging out: %d, %v", status, err)
	}
}

// TestLoginFormBounded posts a login form past the hub's body limit: 413,
// not a form read up to net/http's 10 MB.
func TestLoginFormBounded(t *testing.T) {
	r := newRig(t, 1)
	dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	base := r.start(hub.WithDashboard(dash))
	form := "next=%2F&token=" + strings.Repeat("x", api.MaxBodyBytes)
	res, err := http.Post(base+"/login", "application/x-www-form-urlencoded", strings.NewReader(form)) //nolint:noctx // loopback
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a %d-byte login form: %d, want 413", len(form), res.StatusCode)
	}
}
