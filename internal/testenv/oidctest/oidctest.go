// Package oidctest is an OpenID Connect issuer for tests: it serves its
// discovery document and its signing keys on 127.0.0.1 and signs the ID
// tokens a test asks for, so the hub's OIDC verification runs against a
// real issuer over HTTP with real signatures.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
}

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
	iss := &Issuer{key: key, kid: "test-key"}
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
			"subject_types_supported": []string{"public"}, "response_types_supported": []string{"id_token"}})
	})
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
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.kid))
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer == "" {
		c.Issuer = i.URL
	}
	if c.Expiry.IsZero() {
		c.Expiry = time.Now().Add(time.Hour)
	}
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: jwt.Audience{c.Audience},
		Expiry: jwt.NewNumericDate(c.Expiry), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}
	tok, err := jwt.Signed(signer).Claims(std).Claims(c.Extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
