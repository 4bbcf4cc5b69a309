package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read"
)

// The dashboard's session: a session the hub sealed (sessions.go), never
// the token the viewer logged in with, in an HttpOnly, SameSite=Strict
// cookie. A call to the API that authenticates with the cookie instead of
// an Authorization header must carry the cookie's CSRF value in the
// X-Argosy-CSRF header: another site's page can neither read the value nor
// set the header without a CORS preflight, which the hub never grants.
const (
	SessionCookie = "argosy_session"
	HeaderCSRF    = "X-Argosy-CSRF"
	sessionMaxAge = 8 * time.Hour
)

// csrfValue is the CSRF value of a session cookie: a hash only the
// cookie's holder can compute.
func csrfValue(cookie string) string {
	s := sha256.Sum256([]byte("argosy-csrf\x00" + cookie))
	return hex.EncodeToString(s[:16])
}

// dashboardRoutes adds the dashboard's pages, its login and its assets.
func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	mux.Handle("GET /static/", http.StripPrefix("/static", web.Static()))
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		s.o.dashboard.LoginPage(w, r, http.StatusOK, localPath(r.URL.Query().Get("next")), "", s.browserLogin())
	})
	if s.browserLogin() {
		mux.Handle("GET /login/oidc", s.traced("GET /login/oidc", http.HandlerFunc(s.oidcStart)))
		mux.Handle("GET "+auth.OIDCCallback, s.traced("GET "+auth.OIDCCallback, http.HandlerFunc(s.oidcFinish)))
	}
	mux.Handle("POST /login", s.traced("POST /login", http.HandlerFunc(s.login)))
	mux.Handle("POST /logout", s.traced("POST /logout", http.HandlerFunc(s.logout)))
	mux.Handle("/", s.traced("GET /", http.HandlerFunc(s.page)))
}

// reader returns the principal of a token if it may read.
func (s *Server) reader(r *http.Request, tok string) (*auth.Principal, error) {
	p, err := s.auth.Token(r.Context(), tok)
	if err == nil {
		err = p.Allow(auth.ActionRead, "", nil, "")
	}
	return p, err
}

// readCall is the audit record of a dashboard read by p.
func readCall(r *http.Request, p *auth.Principal) *call {
	return &call{id: uuid.NewString(), action: auth.ActionRead, method: r.Method, path: r.URL.EscapedPath(), remote: r.RemoteAddr, p: p}
}

// setSession sets the session cookie to value for maxAge, or clears it
// for "".
func setSession(w http.ResponseWriter, r *http.Request, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if value == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// login checks the posted token and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	// The form is read whole before anything else: bounded as the API's
	// bodies are, rather than by net/http's 10 MB for forms.
	limitBody(w, r)
	if err := r.ParseForm(); err != nil {
		status, msg := http.StatusBadRequest, "the login form could not be read: "+err.Error()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("the login form is longer than the hub takes, %d bytes", api.MaxBodyBytes)
		}
		s.o.dashboard.LoginPage(w, r, status, "/", msg, s.browserLogin())
		return
	}
	next := localPath(r.PostFormValue("next"))
	if !sameOrigin(r) {
		s.o.dashboard.LoginPage(w, r, http.StatusForbidden, next, "cross-origin login refused", s.browserLogin())
		return
	}
	if s.startSession(w, r, strings.TrimSpace(r.PostFormValue("token")), next, http.StatusSeeOther) {
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// startSession starts a session if the hub accepts tok for reading: it
// audits the start (with answer, the status the caller will get) and
// sets the session cookie. Otherwise it audits the failed login, answers
// with the login page and the reason, and returns false.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, tok, next string, answer int) bool {
	p, err := s.reader(r, tok)
	if err != nil {
		status, msg := http.StatusUnauthorized, err.Error()
		if errors.Is(err, auth.ErrDenied) {
			status = http.StatusForbidden
		}
		if p == nil {
			// No credential: counted and limited, not audited.
			ae := s.refuseUnauthenticated(r, failf(status, "%s", msg))
			status, msg = ae.status, ae.body.Error
		} else if aerr := s.auditCall(r, readCall(r, p), status); aerr != nil {
			s.o.Log.ErrorContext(r.Context(), "auditing a failed login", "err", aerr)
		}
		s.o.dashboard.LoginPage(w, r, status, next, msg, s.browserLogin())
		return false
	}
	v := s.auth.sessions.start(p, tok)
	value, err := s.auth.sessions.seal(v)
	if err == nil {
		err = s.auditCall(r, sessionCall(r, p.Actor, actionStartSession, v), answer)
	}
	if err != nil {
		s.o.dashboard.LoginPage(w, r, http.StatusServiceUnavailable, next, "the session could not be started: "+err.Error(), s.browserLogin())
		return false
	}
	setSession(w, r, value, time.Unix(v.Expiry, 0).Sub(s.o.now().Truncate(time.Second)))
	return true
}

// logout ends the request's session, if it has one, on every replica, and
// clears its cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-origin logout refused", http.StatusForbidden)
		return
	}
	if ck, err := r.Cookie(SessionCookie); err == nil && ck.Value != "" {
		if err := s.endSession(r, ck.Value); err != nil {
			s.o.Log.ErrorContext(r.Context(), "ending a session", "err", err)
			http.Error(w, "the logout could not be recorded, so the session was not ended; try again", http.StatusServiceUnavailable)
			return
		}
	}
	setSession(w, r, "", 0)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// endSession appends the end of the session a cookie holds to the audit
// topic, where every replica's ledger reads it, and ends it on this
// replica at once. A cookie that opens to no live session has nothing to
// end.
func (s *Server) endSession(r *http.Request, value string) error {
	v, err := s.auth.sessions.open(value)
	if err != nil {
		return nil //nolint:nilerr // expired, ended or not the hub's: nothing to end
	}
	if err := s.auditCall(r, sessionCall(r, v.Actor, actionEndSession, v), http.StatusSeeOther); err != nil {
		return err
	}
	s.auth.sessions.end(v.ref(), s.o.now())
	return nil
}

// sessionCall is the audit record of a session's start or end by actor.
func sessionCall(r *http.Request, actor, action string, v session) *call {
	return &call{id: uuid.NewString(), action: action, method: r.Method, path: r.URL.EscapedPath(), remote: r.RemoteAddr,
		target: sessionTarget + v.ref(), p: &auth.Principal{Identity: api.Identity{Actor: actor}}}
}

// page serves a dashboard page to the session's principal, or sends the
// browser to log in.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.writeError(w, r, failf(http.StatusMethodNotAllowed, "method %s not allowed here", r.Method))
		return
	}
	ck, err := r.Cookie(SessionCookie)
	if err != nil || ck.Value == "" {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	p, _, err := s.auth.session(ck.Value)
	if err == nil {
		err = p.Allow(auth.ActionRead, "", nil, "")
	}
	if err != nil {
		setSession(w, r, "", 0)
		s.o.dashboard.LoginPage(w, r, http.StatusUnauthorized, localPath(r.URL.RequestURI()), err.Error(), s.browserLogin())
		return
	}
	// Page views are reads, audited as the API's are; the page's own
	// updates (htmx's requests, with HX-Request, and the live stream of
	// what changed on a page already viewed, /live) are not, so that an
	// open tab does not fill the audit topic.
	if s.o.auditReads && r.Header.Get("HX-Request") == "" && r.URL.Path != "/live" {
		if err := s.auditCall(r, readCall(r, p), http.StatusOK); err != nil {
			s.writeError(w, r, failf(http.StatusServiceUnavailable, "the page view could not be audited, so it was not served: %v", err))
			return
		}
	}
	v := web.Viewer{Actor: p.Actor, Role: p.Role, CanWrite: p.Has(auth.RoleDeployer), CSRF: csrfValue(ck.Value)}
	ctx := web.WithPlacementsVersion(read.WithScope(web.WithViewer(r.Context(), v), p), func() string { return s.placementsVersion(p) })
	if r.URL.Path != "/live" {
		// A page's live stream renders it every second: it asks no
		// cluster anything, or an open stream would ask once a second.
		ctx = web.WithInspect(ctx, s.askLive(p))
	}
	s.o.dashboard.ServeHTTP(w, r.WithContext(ctx))
}

// localPath returns p if it is a path on this server, "/" otherwise, so
// that a login link cannot send the browser elsewhere. It judges p as a
// browser would read it: browsers drop tabs and newlines anywhere in a
// URL and take a backslash for a slash, so that "/\t/evil.example" is
// "//evil.example" to them, another host. A control character or a
// backslash anywhere, raw or percent-encoded, is refused outright, and so
// is anything url.Parse finds a scheme, a host or user info in.
func localPath(p string) string {
	if !isLocalPath(p) {
		return "/"
	}
	return p
}

func isLocalPath(p string) bool {
	check := []string{p}
	if un, err := url.PathUnescape(p); err == nil && un != p {
		check = append(check, un)
	}
	for _, v := range check {
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) ||
			!strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}

// sameOrigin reports whether a form post came from this server's pages:
// browsers send Origin on every POST; a request without one is not a
// browser's cross-site post.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == hubURL(r)
}
