package hub

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read"
)

// The dashboard's session: the token the viewer logged in with, in an
// HttpOnly, SameSite=Strict cookie. A call to the API that authenticates
// with the cookie instead of an Authorization header must carry the
// cookie's CSRF value in the X-Argosy-CSRF header: another site's page can
// neither read the value nor set the header without a CORS preflight,
// which the hub never grants.
const (
	SessionCookie = "argosy_session"
	HeaderCSRF    = "X-Argosy-CSRF"
	sessionMaxAge = 8 * time.Hour
)

// csrfValue is the CSRF value of a session token: a hash only the token's
// holder can compute.
func csrfValue(tok string) string {
	s := sha256.Sum256([]byte("argosy-csrf\x00" + tok))
	return hex.EncodeToString(s[:16])
}

// sessionToken returns the token of the request's session cookie, if its
// CSRF header matches.
func sessionToken(r *http.Request) (string, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return "", fmt.Errorf("%w: no bearer token (send Authorization: Bearer <token>)", errUnauthenticated)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(HeaderCSRF)), []byte(csrfValue(c.Value))) != 1 {
		return "", fmt.Errorf("%w: a call with the dashboard's session cookie needs its %s header", errUnauthenticated, HeaderCSRF)
	}
	return c.Value, nil
}

// dashboardRoutes adds the dashboard's pages, its login and its assets.
func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	mux.Handle("GET /static/", http.StripPrefix("/static", web.Static()))
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		s.o.dashboard.LoginPage(w, r, http.StatusOK, localPath(r.URL.Query().Get("next")), "", s.browserLogin())
	})
	if s.browserLogin() {
		mux.Handle("GET /login/oidc", s.traced("GET /login/oidc", http.HandlerFunc(s.oidcStart)))
		mux.Handle("GET "+oidcCallback, s.traced("GET "+oidcCallback, http.HandlerFunc(s.oidcFinish)))
	}
	mux.Handle("POST /login", s.traced("POST /login", http.HandlerFunc(s.login)))
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			http.Error(w, "cross-origin logout refused", http.StatusForbidden)
			return
		}
		setSession(w, r, "")
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
	mux.Handle("/", s.traced("GET /", http.HandlerFunc(s.page)))
}

// reader returns the principal of a token if it may read.
func (s *Server) reader(r *http.Request, tok string) (*principal, error) {
	p, err := s.auth.token(r.Context(), tok)
	if err == nil {
		err = p.allow(actionRead, "", nil, "")
	}
	return p, err
}

// readCall is the audit record of a dashboard read by p.
func readCall(r *http.Request, p *principal) *call {
	return &call{id: uuid.NewString(), action: actionRead, method: r.Method, path: r.URL.Path, remote: r.RemoteAddr, p: p}
}

// setSession sets the session cookie to tok, or clears it for "".
func setSession(w http.ResponseWriter, r *http.Request, tok string) {
	c := &http.Cookie{Name: SessionCookie, Value: tok, Path: "/", MaxAge: int(sessionMaxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if tok == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// login checks the posted token and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.PostFormValue("next"))
	if !sameOrigin(r) {
		s.o.dashboard.LoginPage(w, r, http.StatusForbidden, next, "cross-origin login refused", s.browserLogin())
		return
	}
	if s.startSession(w, r, strings.TrimSpace(r.PostFormValue("token")), next) {
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// startSession sets the session cookie to tok if the hub accepts it for
// reading; otherwise it audits the failed login, answers with the login
// page and the reason, and returns false.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, tok, next string) bool {
	p, err := s.reader(r, tok)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, errDenied) {
			status = http.StatusForbidden
		}
		if aerr := s.auditCall(r, readCall(r, p), status); aerr != nil {
			s.o.log.ErrorContext(r.Context(), "auditing a failed login", "err", aerr)
		}
		s.o.dashboard.LoginPage(w, r, status, next, err.Error(), s.browserLogin())
		return false
	}
	setSession(w, r, tok)
	return true
}

// page serves a dashboard page to the session's principal, or sends the
// browser to log in.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, failf(http.StatusMethodNotAllowed, "method %s not allowed here", r.Method))
		return
	}
	ck, err := r.Cookie(SessionCookie)
	if err != nil || ck.Value == "" {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	p, err := s.reader(r, ck.Value)
	if err != nil {
		setSession(w, r, "")
		s.o.dashboard.LoginPage(w, r, http.StatusUnauthorized, localPath(r.URL.RequestURI()), err.Error(), s.browserLogin())
		return
	}
	// Page views are reads, audited as the API's are; the page's own
	// periodic refreshes (htmx's, with HX-Request) are not, so that an
	// open tab does not fill the audit topic.
	if s.o.auditReads && r.Header.Get("HX-Request") == "" {
		if err := s.auditCall(r, readCall(r, p), http.StatusOK); err != nil {
			s.writeError(w, r, failf(http.StatusServiceUnavailable, "the page view could not be audited, so it was not served: %v", err))
			return
		}
	}
	v := web.Viewer{Actor: p.Actor, Role: p.Role, CanWrite: p.noRole == "" && rank[p.Role] >= rank[RoleDeployer], CSRF: csrfValue(ck.Value)}
	s.o.dashboard.ServeHTTP(w, r.WithContext(read.WithScope(web.WithViewer(r.Context(), v), p)))
}

// localPath returns p if it is a path on this server, "/" otherwise, so
// that a login link cannot send the browser elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	return p
}

// sameOrigin reports whether a form post came from this server's pages:
// browsers send Origin on every POST; a request without one is not a
// browser's cross-site post.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == hubURL(r)
}
