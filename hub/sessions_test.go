package hub

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/oidctest"
)

// testSessions returns the sessions of a hub signing with signer, on a
// clock the test moves.
func testSessions(t *testing.T, signer *events.Signer, now *time.Time) *sessions {
	t.Helper()
	s, err := newSessions(signer, func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestSigner(t *testing.T) *events.Signer {
	t.Helper()
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSessionSeal: a session cookie holds neither the token nor its hash;
// only a hub with the key opens it, unchanged; a cookie changed by one
// bit, expired or ended is refused; through a rotation of the hub's key a
// cookie sealed by a replica that holds both keys opens on one that holds
// only the next.
func TestSessionSeal(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	signer, other := newTestSigner(t), newTestSigner(t)
	s := testSessions(t, signer, &now)
	tok, entry, err := auth.NewToken("alice", auth.RoleDeployer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New([]auth.Token{entry}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Token(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	v := s.start(p, tok)
	value, err := s.seal(v)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := hex.DecodeString(entry.SHA256)
	for _, leak := range [][]byte{[]byte(tok), []byte(entry.SHA256), hash, []byte("alice")} {
		if bytes.Contains([]byte(value), leak) || bytes.Contains(raw, leak) {
			t.Errorf("the cookie %q shows %q", value, leak)
		}
	}
	got, err := s.open(value)
	if err != nil || got.ID != v.ID || got.Actor != "alice" || !bytes.Equal(got.Token, hash) || got.Expiry != now.Add(sessionMaxAge).Unix() {
		t.Fatalf("open = %+v, %v; want %+v", got, err, v)
	}
	if again := s.start(p, tok); again.ID == v.ID || len(v.ID) < 16 {
		t.Errorf("session ids %q and %q: want long and random", v.ID, again.ID)
	}

	flipped := []byte(value)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]string{
		"one bit changed":           string(flipped),
		"sealed by another hub":     sealWith(t, testSessions(t, other, &now), v),
		"not a seal at all":         "argosy_token",
		"empty seal, right base64":  base64.RawURLEncoding.EncodeToString(make([]byte, 40)),
		"a seal of another session": sealWith(t, s, session{Actor: "root", Expiry: now.Add(time.Hour).Unix()}), // no id
	} {
		if _, err := s.open(c); !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "not one this hub sealed") {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}

	later := now.Add(sessionMaxAge)
	if _, err := testSessions(t, signer, &later).open(value); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("8 hours on: %v, want expired", err)
	}
	s.end(v.ref(), now)
	if _, err := s.open(value); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("after its end: %v, want ended", err)
	}

	next := newTestSigner(t)
	both, err := signer.Cosigner(next)
	if err != nil {
		t.Fatal(err)
	}
	during := sealWith(t, testSessions(t, both, &now), v)
	if _, err := testSessions(t, next, &now).open(during); err != nil {
		t.Errorf("sealed during the rotation, opened after it: %v", err)
	}
	if _, err := testSessions(t, both, &now).open(value); err != nil {
		t.Errorf("sealed before the rotation, opened during it: %v", err)
	}
}

func sealWith(t *testing.T, s *sessions, v session) string {
	t.Helper()
	value, err := s.seal(v)
	if err != nil {
		t.Fatal(err)
	}
	return value
}

// TestSessionFollowsTheTokens: a session's principal is the tokens file's
// as it is now: a token given another role changes its sessions, a token
// taken out ends them; an OIDC caller's session keeps its listed groups,
// is mapped by the groups as they are now, and ends with its ID token.
func TestSessionFollowsTheTokens(t *testing.T) {
	iss := oidctest.New(t)
	cfg := auth.OIDC{Issuer: iss.URL, ClientID: "argosy", Groups: []auth.OIDCGroup{
		{Group: "platform", Role: auth.RoleAdmin},
		{Group: "team-a", Role: auth.RoleDeployer, Projects: []string{"team-a"}, Clusters: "env in (staging)"},
		{Group: "everyone", Role: auth.RoleViewer},
	}}
	a := oidcAuthenticator(t, iss, cfg)
	now := time.Now()
	a.sessions = testSessions(t, newTestSigner(t), &now)
	tok, entry, err := auth.NewToken("alice", auth.RoleDeployer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(auth.TokenFile{Tokens: []auth.Token{entry}, OIDC: &cfg}); err != nil {
		t.Fatal(err)
	}
	start := func(tok string) string {
		t.Helper()
		p, err := a.Token(t.Context(), tok)
		if err != nil {
			t.Fatal(err)
		}
		return sealWith(t, a.sessions, a.sessions.start(p, tok))
	}
	role := func(value string) (string, error) {
		p, _, err := a.session(value)
		if err != nil {
			return "", err
		}
		if err := p.Allow(auth.ActionRead, "", nil, ""); err != nil {
			return "", err
		}
		return p.Role, nil
	}
	alice := start(tok)
	expiry := time.Now().Add(30 * time.Minute).Truncate(time.Second)
	bob := start(iss.Token(t, oidctest.Claims{Subject: "u-bob", Audience: "argosy", Expiry: expiry,
		Extra: map[string]any{"email": "bob@example.com", "groups": []string{"unlisted", "team-a"}}}))
	if got, err := role(alice); got != auth.RoleDeployer || err != nil {
		t.Fatalf("alice: %q, %v", got, err)
	}
	if got, err := role(bob); got != auth.RoleDeployer || err != nil {
		t.Fatalf("bob: %q, %v", got, err)
	}
	if _, v, _ := a.session(bob); !v.OIDC || strings.Join(v.Groups, ",") != "team-a" || v.Expiry != expiry.Unix() {
		t.Errorf("bob's session %+v: want his listed group only, ending with his ID token", v)
	}

	entry.Role = auth.RoleViewer
	cfg.Groups = []auth.OIDCGroup{{Group: "team-a", Role: auth.RoleViewer}}
	if _, err := a.Reload(auth.TokenFile{Tokens: []auth.Token{entry}, OIDC: &cfg}); err != nil {
		t.Fatal(err)
	}
	if got, err := role(alice); got != auth.RoleViewer || err != nil {
		t.Errorf("alice, her token lowered: %q, %v", got, err)
	}
	if got, err := role(bob); got != auth.RoleViewer || err != nil {
		t.Errorf("bob, team-a lowered: %q, %v", got, err)
	}

	cfg.Groups = []auth.OIDCGroup{{Group: "platform", Role: auth.RoleAdmin}}
	if _, err := a.Reload(auth.TokenFile{OIDC: &cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := role(alice); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("alice, her token taken out: %v, want unauthenticated", err)
	}
	if _, err := role(bob); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("bob, team-a taken out: %v, want denied", err)
	}

	now = expiry
	if _, err := role(bob); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("bob, his ID token expired: %v", err)
	}
}

// TestSessionCookieNeedsCSRF: a call with the session cookie is taken
// only with the cookie's CSRF value.
func TestSessionCookieNeedsCSRF(t *testing.T) {
	tok, entry, err := auth.NewToken("alice", auth.RoleViewer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New([]auth.Token{entry}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &authenticator{Authenticator: authn}
	now := time.Now()
	a.sessions = testSessions(t, newTestSigner(t), &now)
	p, err := a.Token(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	value := sealWith(t, a.sessions, a.sessions.start(p, tok))
	for csrf, ok := range map[string]bool{csrfValue(value): true, "": false, csrfValue(tok): false, csrfValue(value) + "0": false} {
		r := httptest.NewRequestWithContext(t.Context(), "GET", "/api/v1/whoami", nil)
		r.Header.Set("Cookie", SessionCookie+"="+value)
		r.Header.Set(HeaderCSRF, csrf)
		if p, err := a.authenticate(r); (err == nil) != ok || (ok && p.Actor != "alice") {
			t.Errorf("CSRF %q: %+v, %v; want ok %v", csrf, p, err, ok)
		}
	}
}

// oidcAuthenticator returns the hub's authenticator of iss's ID tokens,
// whose discovery document it has read.
func oidcAuthenticator(t *testing.T, iss *oidctest.Issuer, cfg auth.OIDC) *authenticator {
	t.Helper()
	a, err := auth.New(nil, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	tok := iss.Token(t, oidctest.Claims{Subject: "probe", Audience: "argosy", Expiry: time.Now().Add(time.Minute)})
	for _, err := a.Token(t.Context(), tok); errors.Is(err, auth.ErrIssuerUnavailable); _, err = a.Token(t.Context(), tok) {
		time.Sleep(10 * time.Millisecond)
	}
	return &authenticator{Authenticator: a}
}
