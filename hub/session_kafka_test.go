//go:build integration

package hub_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/hubtest"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	return hubtest.Do(t, noRedirect, req)
}

func loginRequest(t *testing.T, base, tok, next, origin string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/login",
		strings.NewReader(url.Values{"token": {tok}, "next": {next}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return req
}

func pageRequest(t *testing.T, base, path string, cookie *http.Cookie, header ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// auditedPaths returns the path and status of every audited call.
func (r *rig) auditedPaths() map[string][]int {
	out := map[string][]int{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		out[a.Path] = append(out[a.Path], a.StatusCode)
	}
	return out
}

// TestDashboardSession checks the dashboard's login, its session cookie and
// what of it is audited, on the real broker.
func TestDashboardSession(t *testing.T) {
	r := newRig(t, 2)
	dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	base := r.start(hub.WithDashboard(dash))

	t.Run("a page without a session goes to the login", func(t *testing.T) {
		resp, _ := do(t, pageRequest(t, base, "/audit?actor=bob", nil))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Faudit%3Factor%3Dbob" {
			t.Errorf("%d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("a cross-origin login is refused", func(t *testing.T) {
		resp, _ := do(t, loginRequest(t, base, r.tokens["auditor"], "/", "https://evil.example"))
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("%d, cookies %v", resp.StatusCode, resp.Cookies())
		}
	})

	t.Run("a bad token is refused, and counted rather than audited", func(t *testing.T) {
		resp, body := do(t, loginRequest(t, base, "argosy_nope", "/", base))
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not one this hub accepts") || len(resp.Cookies()) != 0 {
			t.Errorf("%d, cookies %v\n%s", resp.StatusCode, resp.Cookies(), body)
		}
		if got := r.auditedPaths()["/login"]; len(got) != 0 {
			t.Errorf("audited logins without a valid token: %v", got)
		}
	})

	var session *http.Cookie
	t.Run("a good token starts a session, and next stays on this server", func(t *testing.T) {
		resp, _ := do(t, loginRequest(t, base, r.tokens["auditor"], "//evil.example/x", base))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Fatalf("%d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, c := range resp.Cookies() {
			if c.Name == hub.SessionCookie {
				session = c
			}
		}
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Value != r.tokens["auditor"] ||
			session.MaxAge != 8*60*60 {
			t.Fatalf("session cookie %+v", session)
		}
	})

	t.Run("page views are audited, the page's own refreshes are not", func(t *testing.T) {
		for _, req := range []*http.Request{
			pageRequest(t, base, "/clusters/prod-eu", session),
			pageRequest(t, base, "/apps/argocd/guestbook", session, "HX-Request", "true"),
		} {
			if resp, body := do(t, req); resp.StatusCode != http.StatusOK || strings.Contains(body, "data-op=") {
				t.Errorf("%s: %d, or a viewer got write buttons", req.URL.Path, resp.StatusCode)
			}
		}
		paths := r.auditedPaths()
		if len(paths["/clusters/prod-eu"]) != 1 || len(paths["/apps/argocd/guestbook"]) != 0 {
			t.Errorf("audited: %v", paths)
		}
	})

	t.Run("the API takes the session only with its CSRF header", func(t *testing.T) {
		resp, _ := do(t, pageRequest(t, base, "/api/v1/whoami", session))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("without the header: %d", resp.StatusCode)
		}
		_, page := do(t, pageRequest(t, base, "/", session))
		csrf := page[strings.Index(page, `data-csrf="`)+len(`data-csrf="`):]
		csrf = csrf[:strings.IndexByte(csrf, '"')]
		resp, body := do(t, pageRequest(t, base, "/api/v1/whoami", session, hub.HeaderCSRF, csrf))
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"auditor"`) {
			t.Errorf("with the header: %d %s", resp.StatusCode, body)
		}
		resp, _ = do(t, pageRequest(t, base, "/api/v1/whoami", session, hub.HeaderCSRF, csrf+"0"))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("with a wrong header: %d", resp.StatusCode)
		}
	})

	t.Run("a session whose token the hub does not accept ends", func(t *testing.T) {
		resp, _ := do(t, pageRequest(t, base, "/", &http.Cookie{Name: hub.SessionCookie, Value: "argosy_gone"}))
		cleared := false
		for _, c := range resp.Cookies() {
			cleared = cleared || (c.Name == hub.SessionCookie && c.MaxAge < 0)
		}
		if resp.StatusCode != http.StatusUnauthorized || !cleared {
			t.Errorf("%d, cookie cleared %v", resp.StatusCode, cleared)
		}
	})

	t.Run("a cross-origin logout is refused", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/logout", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", "https://evil.example")
		req.AddCookie(session)
		if resp, _ := do(t, req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%d", resp.StatusCode)
		}
	})
}
