package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrincipalAllow(t *testing.T) {
	mk := func(role, clusters string, projects ...string) *Principal {
		t.Helper()
		_, tok, err := NewToken("u", role, projects, clusters)
		if err != nil {
			t.Fatal(err)
		}
		p, err := newPrincipal(tok)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dev := map[string]string{"env": "dev"}
	prod := map[string]string{"env": "prod"}
	tests := []struct {
		name    string
		p       *Principal
		action  string
		cluster string
		labels  map[string]string
		project string
		allowed bool
	}{
		{"viewer reads", mk(RoleViewer, ""), ActionRead, "", nil, "", true},
		{"viewer may not apply", mk(RoleViewer, ""), ActionApplyApplication, "c", dev, "p", false},
		{"deployer applies", mk(RoleDeployer, ""), ActionApplyApplication, "c", dev, "p", true},
		{"deployer may not register", mk(RoleDeployer, ""), ActionRegisterCluster, "c", dev, "", false},
		{"deployer may not apply projects", mk(RoleDeployer, ""), ActionApplyProject, "c", dev, "p", false},
		{"admin registers", mk(RoleAdmin, ""), ActionRegisterCluster, "c", dev, "", true},
		{"selector matches", mk(RoleDeployer, "env=dev"), ActionApplyApplication, "c", dev, "p", true},
		{"selector does not match", mk(RoleDeployer, "env=dev"), ActionApplyApplication, "c", prod, "p", false},
		{"selector on an unlabelled cluster", mk(RoleDeployer, "env=dev"), ActionApplyApplication, "c", nil, "p", false},
		{"project allowed", mk(RoleDeployer, "", "web"), ActionApplyApplication, "c", dev, "web", true},
		{"project not allowed", mk(RoleDeployer, "", "web"), ActionApplyApplication, "c", dev, "api", false},
		{"admin scoped to a project", mk(RoleAdmin, "", "web"), ActionApplyProject, "c", dev, "api", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Allow(tc.action, tc.cluster, tc.labels, tc.project)
			if (err == nil) != tc.allowed || (err != nil && !errors.Is(err, ErrDenied)) {
				t.Errorf("allow = %v, want allowed %v", err, tc.allowed)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tok, entry, err := NewToken("alice", RoleAdmin, nil, "env in (dev,staging)")
	if err != nil {
		t.Fatal(err)
	}
	if entry.SHA256 == tok || entry.SHA256 != HashToken(tok) {
		t.Fatalf("the entry holds %q, want the token's hash", entry.SHA256)
	}
	a, err := New([]Token{entry}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer " + tok, true},
		{"Bearer " + tok + "x", false},
		{"bearer " + tok, false},
		{tok, false},
		{"", false},
		{"Bearer " + entry.SHA256, false}, // the hash is not the token
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", tc.header)
		p, err := a.Request(r)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUnauthenticated)) || (tc.ok && p.Actor != "alice") {
			t.Errorf("%q: %v, %v; want ok %v", tc.header, p, err, tc.ok)
		}
	}
	for _, bad := range []Token{
		{Name: "", SHA256: entry.SHA256, Role: RoleAdmin},
		{Name: "x", SHA256: "abc", Role: RoleAdmin},
		{Name: "x", SHA256: entry.SHA256, Role: "root"},
		{Name: "x", SHA256: entry.SHA256, Role: RoleAdmin, Clusters: "env in ("},
		// The name is the audit's actor: nothing that could fake a line
		// or hide what it says.
		{Name: "ci\nroot", SHA256: entry.SHA256, Role: RoleAdmin},
		{Name: "ci\x1b[2K", SHA256: entry.SHA256, Role: RoleAdmin},
		{Name: "ci\u202eroot", SHA256: entry.SHA256, Role: RoleAdmin},
		{Name: "ci\u00a0", SHA256: entry.SHA256, Role: RoleAdmin},
	} {
		if _, err := New([]Token{bad}, nil); err == nil {
			t.Errorf("token %+v accepted", bad)
		}
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("no tokens accepted")
	}
	if _, err := New([]Token{entry, entry}, nil); err == nil {
		t.Error("the same token twice accepted")
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte("tokens:\n- name: a\n  sha256: "+entry.SHA256+"\n  role: viewer\n  extra: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(path); err == nil {
		t.Error("a tokens file with an unknown field loaded")
	}
	if err := os.WriteFile(path, []byte("tokens:\n- name: \"a\\tb\"\n  sha256: "+entry.SHA256+"\n  role: viewer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := LoadTokenFile(path); err == nil {
		if _, err = New(f.Tokens, nil); err == nil || !strings.Contains(err.Error(), "control") {
			t.Errorf("a token named with a tab: %v, want it refused for its control character", err)
		}
	}
}

// TestReloadNotValid reloads a tokens file that is not valid: the tokens
// it no longer holds stop working, and nothing else changes.
func TestReloadNotValid(t *testing.T) {
	ctx := t.Context()
	tokA, a, err := NewToken("alice", RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	tokB, b, err := NewToken("bob", RoleViewer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := NewToken("carol", RoleViewer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	authn, err := New([]Token{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// bob's token is taken out (it leaked), carol's added, and a typo
	// makes the file not valid.
	broken := Token{Name: "dave", SHA256: "nope", Role: RoleViewer}
	if _, err := authn.Reload(TokenFile{Tokens: []Token{a, c, broken}}); err == nil {
		t.Fatal("a file with a bad token reloaded without an error")
	}
	if _, err := authn.Token(ctx, tokB); err == nil {
		t.Error("a token taken out of a file that is not valid still works")
	}
	if p, err := authn.Token(ctx, tokA); err != nil || p.Actor != "alice" {
		t.Errorf("a token the file still holds = %v, %v", p, err)
	}
	// Two tokens of one name are refused: the audit could not tell them
	// apart.
	same := c
	same.Name = "alice"
	if _, err := New([]Token{a, same}, nil); err == nil || !strings.Contains(err.Error(), "name twice") {
		t.Errorf("two tokens named alice = %v, want refused", err)
	}
}

// TestStatus: the status of each refusal, as the hub and the projector's
// read API answer it.
func TestStatus(t *testing.T) {
	for err, want := range map[error]int{
		fmt.Errorf("%w: no bearer token", ErrUnauthenticated):                       http.StatusUnauthorized,
		fmt.Errorf("%w: the %w does not verify", ErrUnauthenticated, ErrBadIDToken): http.StatusUnauthorized,
		fmt.Errorf("%w: the issuer is not reachable yet", ErrIssuerUnavailable):     http.StatusServiceUnavailable,
		fmt.Errorf("%w: role viewer", ErrDenied):                                    http.StatusForbidden,
	} {
		if got := Status(err); got != want {
			t.Errorf("Status(%v) = %d, want %d", err, got, want)
		}
	}
}
