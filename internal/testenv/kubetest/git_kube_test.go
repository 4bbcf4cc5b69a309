//go:build integration

package kubetest_test

import (
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestServePrivateRepo checks that a served repository is private: git
// cannot list or clone it without the right credentials, and can with them,
// including commits made after the server started.
func TestServePrivateRepo(t *testing.T) {
	repo := kubetest.NewRepo(t)
	rev1 := repo.Commit(t, "v1", map[string]string{"app/demo.yaml": configMap("private", "one")})
	const user = "fleet"
	pass := "pw-" + t.Name()
	served := repo.Serve(t, user, pass)
	if !strings.HasPrefix(served, "http://127.0.0.1:") {
		t.Fatalf("served at %s, want http://127.0.0.1:<port>/...", served)
	}

	t.Run("401 with a Basic challenge", func(t *testing.T) {
		resp, err := http.Get(served + "/info/refs?service=git-upload-pack")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("unauthenticated request: %s, WWW-Authenticate %q; want 401 with a Basic challenge",
				resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	})

	rev2 := repo.Commit(t, "v2", map[string]string{"app/demo.yaml": configMap("private", "two")})
	tests := []struct {
		name string
		cred *url.Userinfo // nil: none
		// fail is what git says when it is refused; "" when it succeeds.
		fail string
	}{
		// Challenged, git has no password to send and may not prompt.
		{"no credentials", nil, "could not read Username"},
		{"wrong password", url.UserPassword(user, "not-"+pass), "Authentication failed"},
		{"wrong user", url.UserPassword("someone", pass), "Authentication failed"},
		{"right credentials", url.UserPassword(user, pass), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(served)
			if err != nil {
				t.Fatal(err)
			}
			u.User = tc.cred
			out, err := gitClient(t, "ls-remote", u.String(), "refs/heads/main")
			if tc.fail != "" {
				if err == nil || !strings.Contains(out, tc.fail) {
					t.Errorf("git ls-remote: %v %q, want it refused with %q", err, out, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatalf("git ls-remote: %v %s", err, out)
			}
			if !strings.HasPrefix(out, rev2) {
				t.Errorf("ls-remote %q, want main at %s (the commit made after Serve)", out, rev2)
			}
			dir := t.TempDir()
			if out, err := gitClient(t, "clone", "-q", u.String(), dir); err != nil {
				t.Fatalf("clone: %v %s", err, out)
			}
			if out, err := gitClient(t, "-C", dir, "cat-file", "-e", rev1); err != nil {
				t.Errorf("clone lacks %s: %v %s", rev1, err, out)
			}
		})
	}
}

// TestServeRefusesPushes checks that a served repository is read-only, even
// to its own user.
func TestServeRefusesPushes(t *testing.T) {
	repo := kubetest.NewRepo(t)
	rev := repo.Commit(t, "v1", map[string]string{"app/demo.yaml": configMap("private", "one")})
	u, err := url.Parse(repo.Serve(t, "fleet", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("fleet", "pw")
	out, err := gitClient(t, "-C", repo.Dir, "push", u.String(), rev+":refs/heads/pushed")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("push: %v %q, want it refused with 403", err, out)
	}
	if out, err := gitClient(t, "-C", repo.Dir, "show-ref", "--verify", "refs/heads/pushed"); err == nil {
		t.Errorf("the pushed branch exists: %s", out)
	}
}

// gitClient runs git as a client with no configuration, credential helper
// or terminal to ask for a password.
func gitClient(t *testing.T, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
