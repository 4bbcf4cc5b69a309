package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/internal/toolcache"
)

// Repo is a local git repository of fixture manifests that Argo CD reads
// through a file:// URL. Tests commit to it to make new revisions.
type Repo struct {
	Dir string
	// URL is the repoURL to give Argo CD.
	URL string
}

// NewRepo creates an empty repository for the test, on branch main.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not installed (%v): install it (make test-tools does)", err)
	}
	dir := t.TempDir()
	r := &Repo{Dir: dir, URL: "file://" + dir}
	r.git(t, "init", "-q", "-b", "main")
	r.git(t, "config", "user.email", "kubetest@argosy.dev")
	r.git(t, "config", "user.name", "kubetest")
	return r
}

// Commit writes files (path → content; empty content deletes the file),
// commits them and returns the new revision.
func (r *Repo) Commit(t testing.TB, msg string, files map[string]string) string {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(path))
		if content == "" {
			if err := os.Remove(full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, "add", "-A")
	r.git(t, "commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.git(t, "rev-parse", "HEAD"))
}

func (r *Repo) git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	out, err := toolcache.Run(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
