package auth

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"sigs.k8s.io/yaml"
)

// TestTokenFileFollowed: a replica reads its tokens file again every
// second: a token added, taken out or given another role applies within
// one; a file that is not valid, or is gone for a while, leaves the tokens
// as they were; a change to the oidc section beyond its groups is taken
// for its groups and reported as needing a restart.
func TestTokenFileFollowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tokens.yaml")
		alice, aliceEntry, err := NewToken("alice", RoleAdmin, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		bob, bobEntry, err := NewToken("bob", RoleViewer, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		write := func(body []byte) {
			t.Helper()
			if err := os.WriteFile(path+".tmp", body, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				t.Fatal(err)
			}
		}
		writeFile := func(f TokenFile) {
			t.Helper()
			b, err := yaml.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			write(b)
		}
		writeFile(TokenFile{Tokens: []Token{aliceEntry}})
		a, err := Open(path, WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		role := func(tok string) string {
			p, err := a.Token(t.Context(), tok)
			if err != nil {
				return "refused"
			}
			return p.Role
		}
		settle := func() {
			time.Sleep(tokenFilePoll + time.Millisecond)
			synctest.Wait()
		}
		steps := []struct {
			name       string
			change     func()
			alice, bob string
		}{
			{"at start", func() {}, RoleAdmin, "refused"},
			{"bob added", func() { writeFile(TokenFile{Tokens: []Token{aliceEntry, bobEntry}}) }, RoleAdmin, RoleViewer},
			{"alice lowered", func() {
				lowered := aliceEntry
				lowered.Role = RoleDeployer
				writeFile(TokenFile{Tokens: []Token{lowered, bobEntry}})
			}, RoleDeployer, RoleViewer},
			{"alice taken out", func() { writeFile(TokenFile{Tokens: []Token{bobEntry}}) }, "refused", RoleViewer},
			{"a file that does not parse", func() { write([]byte("tokens: [")) }, "refused", RoleViewer},
			{"a token that is not valid", func() {
				bad := aliceEntry
				bad.Role = "root"
				writeFile(TokenFile{Tokens: []Token{bad, bobEntry}})
			}, "refused", RoleViewer},
			{"the file gone", func() {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}, "refused", RoleViewer},
			{"the file back, every token out", func() { writeFile(TokenFile{}) }, "refused", "refused"},
		}
		for _, st := range steps {
			st.change()
			settle()
			if got := role(alice); got != st.alice {
				t.Errorf("%s: alice is %s, want %s", st.name, got, st.alice)
			}
			if got := role(bob); got != st.bob {
				t.Errorf("%s: bob is %s, want %s", st.name, got, st.bob)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run = %v", err)
		}
	})
}

// TestTokenFileOIDCChange: the oidc section's groups apply while the hub
// runs; anything else of it takes a restart, which reload reports.
func TestTokenFileOIDCChange(t *testing.T) {
	cfg := &OIDC{Issuer: "https://idp.example.com", ClientID: "argosy", Groups: []OIDCGroup{{Group: "g", Role: RoleViewer}}}
	a, err := New(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		f       TokenFile
		restart bool
	}{
		{"groups changed", TokenFile{OIDC: &OIDC{Issuer: cfg.Issuer, ClientID: cfg.ClientID, Groups: []OIDCGroup{{Group: "h", Role: RoleAdmin}}}}, false},
		{"another client", TokenFile{OIDC: &OIDC{Issuer: cfg.Issuer, ClientID: "other", Groups: cfg.Groups}}, true},
		{"the section gone", TokenFile{}, true},
	} {
		restart, err := a.Reload(tc.f)
		if err != nil || restart != tc.restart {
			t.Errorf("%s: restart %v, %v; want %v", tc.name, restart, err, tc.restart)
		}
	}
	if restart, err := a.Reload(TokenFile{OIDC: &OIDC{Issuer: cfg.Issuer, ClientID: cfg.ClientID}}); err == nil {
		t.Errorf("an oidc section without groups: restart %v, no error", restart)
	}
}
