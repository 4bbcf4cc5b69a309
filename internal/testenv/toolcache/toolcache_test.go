package toolcache

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// entry is one member of a test tarball.
type entry struct {
	name string
	body string
	dir  bool
	link bool
}

// tarball writes a gzipped tar of entries to a file in t.TempDir().
func tarball(t *testing.T, entries ...entry) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.link:
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.body, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatalf("tar body: %v", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("tar close: %v", err)
	}
	if err := gz.Close(); err != nil {
		t.Fatalf("gzip close: %v", err)
	}
	path := filepath.Join(t.TempDir(), "pkg-1.0.0.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatalf("write tarball: %v", err)
	}
	return path
}

// fakePack returns a packFunc that copies src into the destination and counts
// its calls.
func fakePack(src string, calls *atomic.Int32) packFunc {
	return func(_ context.Context, _, dir string) (string, error) {
		calls.Add(1)
		b, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(dir, filepath.Base(src))
		return dst, os.WriteFile(dst, b, 0o644)
	}
}

var goodPackage = []entry{
	{name: "package/", dir: true},
	{name: "package/package.json", body: `{"name":"@scope/pkg","version":"1.0.0"}`},
	{name: "package/schemas/a.json", body: `{"a":1}`},
	{name: "package/link", body: "/etc/passwd", link: true},
}

func TestRoot(t *testing.T) {
	userCache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory here: %v", err)
	}
	abs, err := filepath.Abs("rel/cache")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  string
		want string
	}{
		{"default", "", filepath.Join(userCache, "argosy")},
		{"absolute override", "/srv/cache", "/srv/cache"},
		{"relative override", "rel/cache", abs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvCache, tt.env)
			got, err := Root()
			if err != nil {
				t.Fatalf("Root: %v", err)
			}
			if got != tt.want {
				t.Errorf("Root() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNPMPackageRejectsBadSpecs(t *testing.T) {
	tests := []struct{ name, pkg, version string }{
		{"empty name", "", "1.0.0"},
		{"path traversal", "../evil", "1.0.0"},
		{"dots in scope", "@../x", "1.0.0"},
		{"nested path", "a/b/c", "1.0.0"},
		{"upper case", "Foo", "1.0.0"},
		{"range", "pkg", "^1.0.0"},
		{"tag", "pkg", "latest"},
		{"partial version", "pkg", "1.0"},
		{"slash in version", "pkg", "1.0.0/../x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			_, err := npmPackage(context.Background(), t.TempDir(), tt.pkg, tt.version, fakePack("unused", &calls))
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("err = %v, want ErrInvalidSpec", err)
			}
			if calls.Load() != 0 {
				t.Errorf("pack called %d times, want 0", calls.Load())
			}
		})
	}
}

func TestNPMPackageFetchesOnce(t *testing.T) {
	root := t.TempDir()
	src := tarball(t, goodPackage...)
	var calls atomic.Int32
	for i := range 3 {
		dir, err := npmPackage(context.Background(), root, "@scope/pkg", "1.0.0", fakePack(src, &calls))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if want := filepath.Join(root, "npm", "@scope", "pkg@1.0.0", "package"); dir != want {
			t.Fatalf("dir = %q, want %q", dir, want)
		}
		got, err := os.ReadFile(filepath.Join(dir, "schemas", "a.json"))
		if err != nil || string(got) != `{"a":1}` {
			t.Fatalf("schemas/a.json = %q, %v", got, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "link")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("symlink entry was extracted (err = %v)", err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("pack called %d times, want 1", n)
	}
	leftovers, err := filepath.Glob(filepath.Join(root, "npm", "@scope", ".tmp-*"))
	if err != nil || len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v (err %v)", leftovers, err)
	}
}

func TestNPMPackageConcurrentCallersPackOnce(t *testing.T) {
	root := t.TempDir()
	src := tarball(t, goodPackage...)
	var calls atomic.Int32
	slow := func(ctx context.Context, spec, dir string) (string, error) {
		time.Sleep(20 * time.Millisecond) // widen the window for a race
		return fakePack(src, &calls)(ctx, spec, dir)
	}
	const callers = 8
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			_, errs[i] = npmPackage(context.Background(), root, "pkg", "2.0.0", slow)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("pack called %d times, want 1", n)
	}
}

func TestNPMPackageFailures(t *testing.T) {
	tests := []struct {
		name    string
		entries []entry
		pack    packFunc // nil: copy the tarball of entries
		wantErr string
	}{
		{
			name:    "parent escape",
			entries: []entry{{name: "package/../../evil", body: "x"}},
			wantErr: "escapes the destination",
		},
		{
			name:    "absolute path",
			entries: []entry{{name: "/tmp/evil", body: "x"}},
			wantErr: "escapes the destination",
		},
		{
			name:    "no package directory",
			entries: []entry{{name: "other/package.json", body: "{}"}},
			wantErr: "no package/ directory",
		},
		{
			name:    "not a gzip file",
			entries: goodPackage,
			pack: func(_ context.Context, _, dir string) (string, error) {
				p := filepath.Join(dir, "bad.tgz")
				return p, os.WriteFile(p, []byte("not gzip"), 0o644)
			},
			wantErr: "gunzip",
		},
		{
			name:    "pack fails",
			entries: goodPackage,
			pack: func(context.Context, string, string) (string, error) {
				return "", errors.New("registry unreachable")
			},
			wantErr: "registry unreachable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			src := tarball(t, tt.entries...)
			var calls atomic.Int32
			pack := fakePack(src, &calls)
			if tt.pack != nil {
				pack = tt.pack
			}
			_, err := npmPackage(context.Background(), root, "pkg", "1.0.0", pack)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if _, err := os.Stat(filepath.Join(root, "npm", "pkg@1.0.0")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("entry exists after a failure (stat err = %v)", err)
			}
			leftovers, err := filepath.Glob(filepath.Join(root, "npm", ".tmp-*"))
			if err != nil || len(leftovers) != 0 {
				t.Errorf("temporary directories left behind: %v (err %v)", leftovers, err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(root), "evil")); err == nil {
				t.Error("an entry escaped the destination")
			}
		})
	}
}

func TestNPMPackageReplacesStaleEntry(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, "npm", "pkg@1.0.0")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "junk"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	dir, err := npmPackage(context.Background(), root, "pkg", "1.0.0", fakePack(tarball(t, goodPackage...), &calls))
	if err != nil {
		t.Fatalf("npmPackage: %v", err)
	}
	if !isDir(dir) {
		t.Errorf("%s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(stale, "junk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale file survived (stat err = %v)", err)
	}
}

func TestNPMPackageWaitsForLockUntilContextEnds(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "npm"), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockFile(context.Background(), filepath.Join(root, "npm", "pkg@1.0.0.lock"))
	if err != nil {
		t.Fatalf("lockFile: %v", err)
	}
	defer func() {
		if err := unlock(); err != nil {
			t.Errorf("unlock: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var calls atomic.Int32
	_, err = npmPackage(ctx, root, "pkg", "1.0.0", fakePack(tarball(t, goodPackage...), &calls))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if calls.Load() != 0 {
		t.Error("pack ran without the lock")
	}
}

// TestNPMPackUsesNPM runs npmPack against a stand-in npm script on PATH, to
// check the command line and the error reporting without the registry.
func TestNPMPackUsesNPM(t *testing.T) {
	src := tarball(t, goodPackage...)
	tests := []struct {
		name    string
		script  string
		wantErr string
	}{
		{
			name: "ok",
			script: `printf '%s\n' "$@" > "$ARGS_FILE"
while [ $# -gt 0 ]; do if [ "$1" = --pack-destination ]; then dest=$2; fi; shift; done
cp "$SRC" "$dest/pkg-1.0.0.tgz"
echo pkg-1.0.0.tgz`,
		},
		{
			name:    "npm fails",
			script:  `echo "npm error 404 Not Found" >&2; exit 1`,
			wantErr: "npm error 404 Not Found",
		},
		{
			name:    "no tarball",
			script:  `exit 0`,
			wantErr: "want one tarball",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			script := "#!/bin/sh\n" + tt.script + "\n"
			if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			argsFile := filepath.Join(t.TempDir(), "args")
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Setenv("ARGS_FILE", argsFile)
			t.Setenv("SRC", src)
			dest := t.TempDir()
			got, err := npmPack(context.Background(), "pkg@1.0.0", dest)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("npmPack: %v", err)
			}
			if want := filepath.Join(dest, "pkg-1.0.0.tgz"); got != want {
				t.Errorf("tarball = %q, want %q", got, want)
			}
			args, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatal(err)
			}
			wantArgs := strings.Join([]string{"pack", "pkg@1.0.0", "--silent", "--pack-destination", dest}, "\n") + "\n"
			if string(args) != wantArgs {
				t.Errorf("npm args = %q, want %q", args, wantArgs)
			}
		})
	}
}
