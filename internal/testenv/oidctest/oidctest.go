// Package oidctest is an OpenID Connect issuer for tests: it serves its
// discovery document and its signing keys on 127.0.0.1 and signs the ID
// tokens a test asks for, so the hub's OIDC verification runs against a
// real issuer over HTTP with real signatures. It also runs the
// authorization code flow with PKCE for a browser, logging in whoever the
// test names with SignIn without asking.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running OpenID Connect issuer.
type Issuer struct {
	URL  string
	key  *rsa.PrivateKey
	kid  string
	fail atomic.Int32 // discovery requests still to answer 503
	// stall holds the key set's answers until it is closed; nil: none.
	stall atomic.Pointer[chan struct{}]
	// ClientSecret, when set, is the secret the token endpoint wants.
	ClientSecret string
	// user is who the next browser login is: SignIn's claims.
	user  atomic.Pointer[Claims]
	mu    sync.Mutex
	codes map[string]grant
}

// grant is an authorization code's login, until the code is exchanged.
type grant struct {
	claims                               Claims
	clientID, redirect, nonce, challenge string
}

// SignIn makes the next browser logins log in with c's claims; the issuer
// adds the audience and the login's nonce. Until it is called, a login is
// refused as access_denied.
func (i *Issuer) SignIn(c Claims) { i.user.Store(&c) }

// StallKeys makes requests for the issuer's keys hang, as a stalled
// endpoint does, until the returned function is called.
func (i *Issuer) StallKeys() (release func()) {
	ch := make(chan struct{})
	i.stall.Store(&ch)
	return func() { i.stall.Store(nil); close(ch) }
}

// FailDiscovery makes the next n requests for the discovery document fail
// with 503, as an issuer that is down.
func (i *Issuer) FailDiscovery(n int) { i.fail.Store(int32(n)) }

// New starts an issuer that stops when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{key: key, kid: "test-key", codes: map[string]grant{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		if iss.fail.Add(-1) >= 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys", "authorization_endpoint": iss.URL + "/auth",
			"token_endpoint": iss.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"},
			"subject_types_supported": []string{"public"}, "response_types_supported": []string{"code", "id_token"},
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("GET /auth", iss.authorize)
	mux.HandleFunc("POST /token", iss.token)
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		if ch := iss.stall.Load(); ch != nil {
			select {
			case <-*ch:
			case <-r.Context().Done():
				return
			}
		}
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: iss.kid, Algorithm: "RS256", Use: "sig"}}})
	})
	return iss
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(b); err != nil {
		return // the client went away
	}
}

// Claims are an ID token's; zero fields get defaults: this issuer, an
// expiry an hour on, issued now.
type Claims struct {
	Issuer   string
	Subject  string
	Audience string
	Expiry   time.Time
	// Extra are further claims (email, groups).
	Extra map[string]any
}

// Token returns an ID token with c's claims, signed by the issuer's key.
func (i *Issuer) Token(t testing.TB, c Claims) string {
	t.Helper()
	return i.sign(t, i.key, c)
}

// TokenSignedBy returns an ID token signed by another key, one the
// issuer's key set does not have.
func (i *Issuer) TokenSignedBy(t testing.TB, c Claims) string {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return i.sign(t, other, c)
}

func (i *Issuer) sign(t testing.TB, key *rsa.PrivateKey, c Claims) string {
	t.Helper()
	tok, err := i.signed(key, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (i *Issuer) signed(key *rsa.PrivateKey, c Claims) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.kid))
	if err != nil {
		return "", err
	}
	if c.Issuer == "" {
		c.Issuer = i.URL
	}
	if c.Expiry.IsZero() {
		c.Expiry = time.Now().Add(time.Hour)
	}
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: jwt.Audience{c.Audience},
		Expiry: jwt.NewNumericDate(c.Expiry), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}
	return jwt.Signed(signer).Claims(std).Claims(c.Extra).Serialize()
}

// authorize logs SignIn's user in at once and sends the browser back to
// the client with a code.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || back.Host == "" {
		http.Error(w, "redirect_uri: want an absolute URL", http.StatusBadRequest)
		return
	}
	answer := back.Query()
	answer.Set("state", q.Get("state"))
	user := i.user.Load()
	switch {
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		answer.Set("error", "invalid_request")
		answer.Set("error_description", "want response_type code with an S256 code challenge")
	case user == nil:
		answer.Set("error", "access_denied")
	default:
		code := rand.Text()
		i.mu.Lock()
		i.codes[code] = grant{claims: *user, clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"),
			nonce: q.Get("nonce"), challenge: q.Get("code_challenge")}
		i.mu.Unlock()
		answer.Set("code", code)
	}
	back.RawQuery = answer.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code, once, for an ID token: the client, its secret,
// the redirect and the PKCE verifier must be the login's.
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	i.mu.Lock()
	g, found := i.codes[r.PostForm.Get("code")]
	delete(i.codes, r.PostForm.Get("code"))
	i.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code" || !found:
		tokenError(w, http.StatusBadRequest, "invalid_grant")
	case id != g.clientID || secret != i.ClientSecret:
		tokenError(w, http.StatusUnauthorized, "invalid_client")
	case r.PostForm.Get("redirect_uri") != g.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		tokenError(w, http.StatusBadRequest, "invalid_grant")
	default:
		c := g.claims
		c.Audience = g.clientID
		c.Extra = maps.Clone(c.Extra)
		if c.Extra == nil {
			c.Extra = map[string]any{}
		}
		c.Extra["nonce"] = g.nonce
		tok, err := i.signed(i.key, c)
		if err != nil {
			tokenError(w, http.StatusInternalServerError, "server_error")
			return
		}
		writeJSON(w, map[string]any{"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 3600, "id_token": tok})
	}
}

func tokenError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write([]byte(`{"error":"` + code + `"}`)); err != nil {
		return // the client went away
	}
}
