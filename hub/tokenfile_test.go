package hub

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/argosyproj/argosy/hub/auth"
)

// TestTokenFileOption: WithTokenFile takes the place of New's tokens and
// WithOIDC, not their side.
func TestTokenFileOption(t *testing.T) {
	_, entry, err := auth.NewToken("alice", auth.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte("tokens: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := newOptions([]Option{WithTokenFile(path)})
	if _, err := o.authenticator([]auth.Token{entry}); err == nil {
		t.Error("tokens given both ways were taken")
	}
	o = newOptions([]Option{WithTokenFile(filepath.Join(t.TempDir(), "missing.yaml"))})
	if _, err := o.authenticator(nil); err == nil {
		t.Error("a missing tokens file was taken")
	}
}
