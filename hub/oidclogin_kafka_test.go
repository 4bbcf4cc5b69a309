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

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/internal/testenv/oidctest"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// TestDashboardOIDCLogin logs in to the dashboard in Chromium through a
// local issuer's authorization code flow: a refused login shows the
// issuer's reason, a viewer lands on the page it asked for with its OIDC
// identity, a caller whose groups have no role gets no session, a callback
// the hub did not start is refused, and the page views are audited by
// the OIDC identity.
func TestDashboardOIDCLogin(t *testing.T) {
	r := newRig(t, 1)
	iss := oidctest.New(t)
	iss.ClientSecret = "s3cret"
	dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	base := r.start(hub.WithDashboard(dash), hub.WithOIDC(auth.OIDC{Issuer: iss.URL, ClientID: "argosy", ClientSecret: "s3cret",
		BrowserLogin: true, Groups: []auth.OIDCGroup{{Group: "platform", Role: auth.RoleAdmin}, {Group: "everyone", Role: auth.RoleViewer}}}))
	// The hub reads the issuer's discovery document as it starts.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, _ := do(t, pageRequest(t, base, "/login/oidc", nil))
		if resp.StatusCode == http.StatusSeeOther {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /login/oidc answers %d", resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, pages := browsertest.New(t)
	login := func(t *testing.T, next string) (path, text string) {
		t.Helper()
		if err := chromedp.Run(b, chromedp.Navigate(base+next), chromedp.WaitVisible("#oidc-login", chromedp.ByID),
			chromedp.Click("#oidc-login", chromedp.ByID), chromedp.WaitReady("main", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		waitLanded(t, b, base)
		if err := chromedp.Run(b, chromedp.Evaluate(`location.pathname`, &path), chromedp.Text("body", &text, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		return path, text
	}

	t.Run("the issuer refuses", func(t *testing.T) {
		path, text := login(t, "/audit")
		if path != "/login/oidc/callback" || !strings.Contains(text, "the OIDC issuer refused the login: access_denied") {
			t.Errorf("at %s:\n%s", path, text)
		}
	})

	t.Run("a viewer lands where it was going", func(t *testing.T) {
		iss.SignIn(oidctest.Claims{Subject: "u-bob", Extra: map[string]any{"email": "bob@example.com", "groups": []string{"everyone"}}})
		path, text := login(t, "/audit?actor=bob")
		if path != "/audit" || !strings.Contains(text, "oidc:bob@example.com viewer") {
			t.Errorf("at %s:\n%s", path, text)
		}
	})

	t.Run("no role, no session", func(t *testing.T) {
		var status int
		if err := chromedp.Run(b, chromedp.Evaluate(`fetch('/logout', {method: 'POST'}).then(r => r.status)`, &status,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil || status != 200 {
			t.Fatalf("logging out: %d, %v", status, err)
		}
		iss.SignIn(oidctest.Claims{Subject: "u-eve", Extra: map[string]any{"email": "eve@example.com", "groups": []string{"contractors"}}})
		path, text := login(t, "/")
		if path != "/login/oidc/callback" || !strings.Contains(text, "has a role here") {
			t.Errorf("at %s:\n%s", path, text)
		}
		var atLogin bool
		if err := chromedp.Run(b, chromedp.Navigate(base+"/"), chromedp.Evaluate(`document.querySelector('#oidc-login') !== null`, &atLogin)); err != nil {
			t.Fatal(err)
		}
		if !atLogin {
			t.Error("a caller without a role reached a page")
		}
	})

	t.Run("a callback the hub did not start", func(t *testing.T) {
		resp, body := do(t, pageRequest(t, base, "/login/oidc/callback?state=forged&code=stolen", nil))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not started here") || len(resp.Cookies()) != 1 {
			t.Errorf("%d, cookies %v\n%s", resp.StatusCode, resp.Cookies(), body)
		}
	})

	t.Run("a next page off the hub", func(t *testing.T) {
		for _, next := range offSite {
			iss.SignIn(oidctest.Claims{Subject: "u-bob", Extra: map[string]any{"email": "bob@example.com", "groups": []string{"everyone"}}})
			if err := chromedp.Run(b, chromedp.Navigate(base+"/login?next="+url.QueryEscape(next)), chromedp.WaitVisible("#oidc-login", chromedp.ByID),
				chromedp.Click("#oidc-login", chromedp.ByID)); err != nil {
				t.Fatal(err)
			}
			// Until it is on the hub's front page, or off both the hub
			// and the issuer.
			var href string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if err := chromedp.Run(b, chromedp.Evaluate(`location.href`, &href)); err == nil &&
					(href == base+"/" || !strings.HasPrefix(href, base) && !strings.HasPrefix(href, iss.URL)) {
					break
				}
			}
			if href != base+"/" {
				t.Errorf("next %q: landed on %s, want the hub's %s/", next, href, base)
				continue
			}
			logout(t, b)
		}
	})

	audited := map[string]bool{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		audited[a.Actor+" "+a.Path+" "+a.Outcome] = true
	}
	if !audited["oidc:bob@example.com /audit allowed"] || !audited["oidc:eve@example.com /login/oidc/callback denied"] {
		t.Errorf("audited %v: want bob's page view and eve's refused login", audited)
	}
	if errs := pages.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// waitLanded waits until the browser is back on the hub after the
// issuer's round trip and any page that navigates on.
func waitLanded(t *testing.T, b context.Context, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var href string
		var refresh bool
		if err := chromedp.Run(b, chromedp.Evaluate(`location.href`, &href),
			chromedp.Evaluate(`document.querySelector('meta[http-equiv="refresh"]') !== null`, &refresh)); err == nil &&
			strings.HasPrefix(href, base) && !refresh {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not come back to the hub")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
