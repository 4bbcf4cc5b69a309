//go:build integration

package hub_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/hub/web"
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

	t.Run("a method a path does not take is a 405 with Allow", func(t *testing.T) {
		for _, tc := range []struct{ method, path, allow string }{
			{http.MethodPut, "/audit", "GET, HEAD"},                      // a page
			{http.MethodPost, "/api/v1/clusters/prod-eu", "DELETE, PUT"}, // the API's, under the pages' /
			{http.MethodDelete, "/openapi.json", "GET, HEAD"},
		} {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, body := do(t, req)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tc.allow {
				t.Errorf("%s %s: %d, Allow %q, want 405 with Allow %q\n%s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.allow, body)
			}
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
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || strings.Contains(session.Value, r.tokens["auditor"]) ||
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
		// The page's live stream is served behind the session, and not
		// audited either.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		live := pageRequest(t, base, "/live?path="+url.QueryEscape("/clusters/prod-eu"), session).WithContext(ctx)
		resp, err := http.DefaultClient.Do(live)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		first, err := br.ReadString('\n')
		for err == nil && !strings.HasPrefix(first, "event: patch") {
			first, err = br.ReadString('\n')
		}
		cancel()
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(first, "event: patch") {
			t.Errorf("live stream: %d, first event %q, %v", resp.StatusCode, first, err)
		}
		if resp, _ := do(t, pageRequest(t, base, "/live?path=%2F", nil)); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a live stream without a session: %d", resp.StatusCode)
		}
		paths := r.auditedPaths()
		if len(paths["/clusters/prod-eu"]) != 1 || len(paths["/apps/argocd/guestbook"]) != 0 || len(paths["/live"]) != 0 {
			t.Errorf("audited: %v", paths)
		}
	})

	t.Run("the placements page's version follows the hub's placements", func(t *testing.T) {
		version := func() string {
			_, page := do(t, pageRequest(t, base, "/placements", session))
			_, v, _ := strings.Cut(page, `id="placements-version"`)
			_, v, _ = strings.Cut(v, ">")
			v, _, _ = strings.Cut(v, "</span>")
			return v
		}
		before := version()
		if before == "" {
			t.Fatal("the placements page shows no version")
		}
		if _, err := r.client(base, "root").ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=nowhere", Manifest: appManifest()},
			api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); version() == before; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the placements page's version did not change with a new placement")
			}
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

// login logs in to the dashboard at base with tok and returns the session
// cookie and the CSRF value the pages carry.
func login(t *testing.T, base, tok string) (*http.Cookie, string) {
	t.Helper()
	resp, body := do(t, loginRequest(t, base, tok, "/", base))
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == hub.SessionCookie {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil {
		t.Fatalf("login: %d, cookie %v\n%s", resp.StatusCode, session, body)
	}
	return session, csrfOnPage(t, base, session)
}

// whoami calls /api/v1/whoami with the session cookie and its CSRF value,
// or, with a nil cookie, with tok as the bearer, and returns the status
// and the caller's role.
func whoami(t *testing.T, base string, session *http.Cookie, csrf, tok string) (int, string) {
	t.Helper()
	header := []string{hub.HeaderCSRF, csrf}
	if session == nil {
		header = []string{"Authorization", "Bearer " + tok}
	}
	resp, body := do(t, pageRequest(t, base, "/api/v1/whoami", session, header...))
	var id api.Identity
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &id); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, id.Role
}

// eventually polls check until it returns "" or the deadline passes, then
// fails with its last answer. Replicas follow the log and the tokens file
// in the background: what they must do, they must do within seconds.
func eventually(t *testing.T, within time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := check()
		if got == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSessionsAcrossReplicas runs two replicas over one tokens file and
// holds dashboard sessions to what the tokens file and the log say: the
// cookie holds neither the token nor its hash; a session started on one
// replica works on the other; a logout ends it on both, and on a replica
// started afterwards; a token taken out of the file, or given a lower
// role, ends or lowers its bearer calls and its sessions on both, without
// a restart.
func TestSessionsAcrossReplicas(t *testing.T) {
	r := newRig(t, 2)
	r.useTokenFile()
	dashboard := func() hub.Option {
		dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
		if err != nil {
			t.Fatal(err)
		}
		return hub.WithDashboard(dash)
	}
	a, b := r.start(dashboard()), r.start(dashboard())
	replicas := map[string]string{"A": a, "B": b}
	const within = 15 * time.Second

	var ended *http.Cookie
	var endedCSRF string
	t.Run("the cookie holds neither the token nor its hash", func(t *testing.T) {
		tok := r.tokens["auditor"]
		hash := auth.HashToken(tok)
		raw, err := hex.DecodeString(hash)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := login(t, a, tok)
		again, _ := login(t, a, tok)
		for _, c := range []*http.Cookie{first, again} {
			v := c.Value
			var decoded []byte
			for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
				if b, err := enc.DecodeString(v); err == nil {
					decoded = b
				}
			}
			if strings.Contains(v, tok) || strings.Contains(v, hash) || strings.Contains(v, tok[len("argosy_"):]) ||
				bytes.Contains(decoded, []byte(tok)) || bytes.Contains(decoded, []byte(hash)) || bytes.Contains(decoded, raw) {
				t.Errorf("the session cookie %q carries the token or its hash", v)
			}
		}
		if first.Value == again.Value {
			t.Error("two logins with one token got the same session cookie")
		}
		ended = first
	})

	t.Run("a session started on one replica works on the other", func(t *testing.T) {
		endedCSRF = csrfOnPage(t, b, ended)
		for name, base := range replicas {
			if status, role := whoami(t, base, ended, endedCSRF, ""); status != http.StatusOK || role != auth.RoleViewer {
				t.Errorf("replica %s: %d, role %q", name, status, role)
			}
			if resp, _ := do(t, pageRequest(t, base, "/", ended)); resp.StatusCode != http.StatusOK {
				t.Errorf("replica %s: the fleet page answers %d", name, resp.StatusCode)
			}
		}
	})

	t.Run("a logout ends the session on both replicas", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a+"/logout", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", a)
		req.AddCookie(ended)
		if resp, body := do(t, req); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d\n%s", resp.StatusCode, body)
		}
		if status, _ := whoami(t, a, ended, endedCSRF, ""); status != http.StatusUnauthorized {
			t.Errorf("replica A, right after the logout: %d, want 401", status)
		}
		eventually(t, within, func() string {
			if status, _ := whoami(t, b, ended, endedCSRF, ""); status != http.StatusUnauthorized {
				return fmt.Sprintf("replica B answers the ended session's call with %d", status)
			}
			if resp, _ := do(t, pageRequest(t, b, "/", ended)); resp.StatusCode != http.StatusUnauthorized {
				return fmt.Sprintf("replica B serves the ended session a page: %d", resp.StatusCode)
			}
			return ""
		})
	})

	t.Run("a token taken out of the file ends its calls and sessions", func(t *testing.T) {
		tok := r.tokens["dev-deployer"]
		session, csrf := login(t, b, tok)
		for name, base := range replicas {
			if status, _ := whoami(t, base, nil, "", tok); status != http.StatusOK {
				t.Fatalf("replica %s, before: %d", name, status)
			}
		}
		r.writeTokens(slices.DeleteFunc(slices.Clone(r.list), func(tk auth.Token) bool { return tk.Name == "dev-deployer" }))
		eventually(t, within, func() string {
			for name, base := range replicas {
				if status, _ := whoami(t, base, nil, "", tok); status != http.StatusUnauthorized {
					return fmt.Sprintf("replica %s answers the removed token with %d", name, status)
				}
				if status, _ := whoami(t, base, session, csrf, ""); status != http.StatusUnauthorized {
					return fmt.Sprintf("replica %s answers the removed token's session with %d", name, status)
				}
			}
			return ""
		})
	})

	var live *http.Cookie
	var liveCSRF string
	t.Run("a token given a lower role is lowered in its calls and sessions", func(t *testing.T) {
		tok := r.tokens["root"]
		live, liveCSRF = login(t, a, tok)
		lowered := slices.Clone(r.list)
		for i := range lowered {
			if lowered[i].Name == "root" {
				lowered[i].Role = auth.RoleViewer
			}
		}
		lowered = slices.DeleteFunc(lowered, func(tk auth.Token) bool { return tk.Name == "dev-deployer" })
		r.writeTokens(lowered)
		eventually(t, within, func() string {
			for name, base := range replicas {
				if status, role := whoami(t, base, nil, "", tok); status != http.StatusOK || role != auth.RoleViewer {
					return fmt.Sprintf("replica %s: the token is %d %q, want a viewer", name, status, role)
				}
				if status, role := whoami(t, base, live, liveCSRF, ""); status != http.StatusOK || role != auth.RoleViewer {
					return fmt.Sprintf("replica %s: its session is %d %q, want a viewer", name, status, role)
				}
			}
			return ""
		})
	})

	t.Run("a replica started afterwards knows which sessions ended", func(t *testing.T) {
		c := r.start(dashboard())
		if status, _ := whoami(t, c, ended, endedCSRF, ""); status != http.StatusUnauthorized {
			t.Errorf("the ended session: %d, want 401", status)
		}
		if status, role := whoami(t, c, live, liveCSRF, ""); status != http.StatusOK || role != auth.RoleViewer {
			t.Errorf("a live session: %d %q, want a viewer's 200", status, role)
		}
	})
}

// csrfOnPage returns the CSRF value of the page base serves to session.
func csrfOnPage(t *testing.T, base string, session *http.Cookie) string {
	t.Helper()
	_, page := do(t, pageRequest(t, base, "/", session))
	i := strings.Index(page, `data-csrf="`)
	if i < 0 {
		t.Fatalf("no CSRF value in the page:\n%s", page)
	}
	csrf := page[i+len(`data-csrf="`):]
	return csrf[:strings.IndexByte(csrf, '"')]
}
