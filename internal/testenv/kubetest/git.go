package kubetest

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/toolcache"
)

// Repo is a local git repository of fixture manifests that Argo CD reads
// through a file:// URL, or over HTTP behind a password (Serve). Tests
// commit to it to make new revisions.
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

// repoPath is the path of a served repository in its URL.
const repoPath = "/repo.git"

// Serve serves the repository, read-only, over git's smart HTTP protocol on
// 127.0.0.1 until the test ends, and returns its URL
// (http://127.0.0.1:<port>/repo.git). Like a private git host, it answers
// every request that does not carry HTTP basic authentication as user with
// pass with 401 and a Basic WWW-Authenticate challenge. Commits made after
// Serve are served too.
//
// The server runs `git http-backend` through net/http/cgi, with
// GIT_PROJECT_ROOT set to the repository and GIT_HTTP_EXPORT_ALL, so that
// no git-daemon-export-ok file is needed. Pushes are refused: the backend
// allows receive-pack only for an authenticated REMOTE_USER, which the CGI
// environment never sets. The Authorization header is not passed to git.
func (r *Repo) Serve(t testing.TB, user, pass string) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is not installed (%v): install it (make test-tools does)", err)
	}
	stderr := &testLog{t: t, prefix: "git http-backend: "}
	backend := &cgi.Handler{
		Path: git, Args: []string{"http-backend"}, Root: repoPath, Dir: r.Dir,
		Env:    []string{"GIT_PROJECT_ROOT=" + r.Dir, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
		Stderr: stderr,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("git server: %v", err)
	}
	srv := &http.Server{Handler: basicAuth(user, pass, backend), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		// Shutdown waits for the requests in flight, and so for their git
		// processes; Close ends what is still running after 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		if err != nil {
			t.Errorf("git server: %v", err)
		}
		// Requests still running after Close end without the test.
		stderr.stop()
	})
	return "http://" + ln.Addr().String() + repoPath
}

// basicAuth passes on only the requests authenticated as user with pass,
// without their Authorization header.
func basicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		// Both comparisons always run, so that the time taken does not
		// tell which one failed.
		okUser := subtle.ConstantTimeCompare([]byte(u), []byte(user))
		okPass := subtle.ConstantTimeCompare([]byte(p), []byte(pass))
		if !ok || okUser&okPass != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="kubetest git", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
}

// testLog writes each write to the test's log until it is stopped, and
// drops writes after that: t.Log panics once the test has ended.
type testLog struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Logf("%s%s", l.prefix, strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}
