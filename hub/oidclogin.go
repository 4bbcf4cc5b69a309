package hub

import (
	"github.com/argosyproj/argosy/hub/auth"

	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// The dashboard's OIDC login: the authorization code flow with PKCE. The
// login's state, nonce, PKCE verifier and next page wait in a short-lived
// HttpOnly cookie bound to the callback's path; SameSite=Lax, because the
// issuer sends the browser back by a cross-site navigation, which a Strict
// cookie would not go with.
const (
	oidcStateCookie = "argosy_oidc"
	oidcLoginMaxAge = 10 * time.Minute
)

// oidcLogin is what the state cookie holds.
type oidcLogin struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"next"`
}

// browserLogin reports whether the login page offers the OIDC login.
func (s *Server) browserLogin() bool { return s.auth.BrowserLogin() }

// oidcStart sends the browser to the issuer to log in.
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	conf, err := s.auth.OAuth2Config(hubURL(r) + auth.OIDCCallback)
	if err != nil {
		s.o.dashboard.LoginPage(w, r, http.StatusServiceUnavailable, next, err.Error(), true)
		return
	}
	l := oidcLogin{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: next}
	b, err := json.Marshal(l)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcStateCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: auth.OIDCCallback,
		MaxAge: int(oidcLoginMaxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	http.Redirect(w, r, conf.AuthCodeURL(l.State, oidc.Nonce(l.Nonce), oauth2.S256ChallengeOption(l.Verifier)), http.StatusSeeOther)
}

// oidcFinish takes the issuer's answer: it checks the state, exchanges the
// code for an ID token, checks its nonce, and starts a session with it as
// a pasted token would: the session keeps the caller's name and listed
// groups and ends when the ID token expires, and the token is kept nowhere.
func (s *Server) oidcFinish(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: oidcStateCookie, Path: auth.OIDCCallback, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	l, err := loginState(r)
	if err != nil {
		s.o.dashboard.LoginPage(w, r, http.StatusBadRequest, "/", err.Error(), true)
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.o.dashboard.LoginPage(w, r, http.StatusUnauthorized, l.Next, fmt.Sprintf("the OIDC issuer refused the login: %s %s", e, q.Get("error_description")), true)
		return
	}
	tok, err := s.auth.Exchange(r.Context(), hubURL(r)+auth.OIDCCallback, q.Get("code"), l.Verifier, l.Nonce)
	if err != nil {
		s.o.Log.WarnContext(r.Context(), "an OIDC login failed", "err", err)
		s.o.dashboard.LoginPage(w, r, http.StatusUnauthorized, l.Next, err.Error(), true)
		return
	}
	if !s.startSession(w, r, tok, l.Next, http.StatusOK) {
		return
	}
	// A page of the hub's own navigates on: the issuer's redirect to here
	// was cross-site, and the browser would not send the Strict session
	// cookie along a redirect that continues it.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := continuePage.Execute(w, l.Next); err != nil {
		s.o.Log.ErrorContext(r.Context(), "writing the OIDC login's last page", "err", err)
	}
}

var continuePage = template.Must(template.New("continue").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={{.}}"><title>Logged in · Argosy</title></head>
<body><p>Logged in. <a href="{{.}}">Continue</a>.</p></body></html>
`))

// loginState reads and checks the state cookie against the callback's
// state parameter.
func loginState(r *http.Request) (oidcLogin, error) {
	var l oidcLogin
	c, err := r.Cookie(oidcStateCookie)
	if err != nil {
		return l, errors.New("the OIDC login expired or was not started here: log in again")
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err == nil {
		err = json.Unmarshal(b, &l)
	}
	if err != nil || l.State == "" {
		return l, errors.New("the OIDC login's state is unreadable: log in again")
	}
	l.Next = localPath(l.Next)
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(l.State)) != 1 {
		return l, errors.New("the OIDC login's state does not match: log in again")
	}
	return l, nil
}
