package cli_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/auth"
)

// TestTokenNewActFor: --act-for writes the token's grants to the tokens
// file, in order, and a grant that is not user:NAME=ROLE or
// group:NAME=ROLE, or names no role the hub has, is a usage error that
// writes nothing.
func TestTokenNewActFor(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	run := func(args ...string) error {
		root := cli.NewRoot(cmdkit.IOStreams{Out: &discard{}, Err: &discard{}})
		root.SetArgs(append([]string{"token", "new"}, append(args, "--file", file)...))
		return root.ExecuteContext(t.Context())
	}
	if err := run("argosy-mirror", "--role", "viewer", "--act-for", "group:platform=admin", "--act-for", "user:alice=deployer"); err != nil {
		t.Fatal(err)
	}
	f, err := auth.LoadTokenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []auth.KubernetesGrant{{Group: "platform", Role: auth.RoleAdmin}, {User: "alice", Role: auth.RoleDeployer}}
	if len(f.Tokens) != 1 || !cmp.Equal(f.Tokens[0].ActFor, want) {
		t.Fatalf("tokens file %+v, want the mirror's token with grants %+v", f.Tokens, want)
	}
	for _, bad := range []string{"platform=admin", "group:platform", "team:platform=admin", "user:alice=root", "group:=viewer"} {
		var usage *cmdkit.FlagError
		if err := run("other", "--act-for", bad); !errors.As(err, &usage) {
			t.Errorf("--act-for %s: %v, want a usage error", bad, err)
		}
	}
	if f, err := auth.LoadTokenFile(file); err != nil || len(f.Tokens) != 1 {
		t.Errorf("after the refused grants, the file holds %d tokens (%v), want 1", len(f.Tokens), err)
	}
}
