// Package toolcache fetches pinned third-party artefacts that tests and
// developer tools need but the repository does not check in (such as the
// official AsyncAPI JSON Schema, shipped in an npm package), and keeps them in
// a per-user cache so that each version is fetched once per machine.
//
// Entries are immutable: a name and an exact version always map to the same
// directory, which appears atomically (extracted beside it, then renamed) and
// is created under an exclusive file lock, so that parallel test binaries
// neither race nor see a half-written tree.
package toolcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// EnvCache names the environment variable that overrides the cache root. When
// it is unset the root is the "argosy" directory under os.UserCacheDir.
const EnvCache = "ARGOSY_CACHE"

// Root returns the absolute path of the cache root.
func Root() (string, error) {
	if dir := os.Getenv(EnvCache); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("%s: %w", EnvCache, err)
		}
		return abs, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache directory (set %s instead): %w", EnvCache, err)
	}
	return filepath.Join(dir, "argosy"), nil
}

// NPMPackage returns the directory holding the contents of the npm package
// name at exactly version: <root>/npm/<name>@<version>/package. When it is not
// cached yet it runs `npm pack` (which needs npm on PATH and the npm registry
// configured for it) and extracts the tarball.
func NPMPackage(ctx context.Context, name, version string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return npmPackage(ctx, root, name, version, npmPack)
}

// packFunc downloads the tarball of an npm package spec ("name@version") into
// dir and returns its path.
type packFunc func(ctx context.Context, spec, dir string) (string, error)

var (
	// npmName is a package name, optionally scoped. Upper case, which npm
	// only accepts in legacy names, is refused.
	npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// exactVersion is a full semantic version: ranges and tags would make
	// the cache key lie.
	exactVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// ErrInvalidSpec is returned for a package name or version NPMPackage refuses.
var ErrInvalidSpec = errors.New("invalid npm package spec")

func npmPackage(ctx context.Context, root, name, version string, pack packFunc) (dir string, err error) {
	if !npmName.MatchString(name) || strings.Contains(name, "..") {
		return "", fmt.Errorf("%w: name %q", ErrInvalidSpec, name)
	}
	if !exactVersion.MatchString(version) {
		return "", fmt.Errorf("%w: version %q is not an exact version", ErrInvalidSpec, version)
	}
	spec := name + "@" + version
	entry := filepath.Join(root, "npm", filepath.FromSlash(spec))
	err = Ensure(ctx, entry, "package", func(ctx context.Context, scratch, out string) error {
		tarball, err := pack(ctx, spec, scratch)
		if err != nil {
			return err
		}
		if err := extract(tarball, out); err != nil {
			return fmt.Errorf("extracting %s: %w", filepath.Base(tarball), err)
		}
		if !isDir(filepath.Join(out, "package")) {
			return errors.New("tarball has no package/ directory")
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("npm package %s: %w", spec, err)
	}
	return filepath.Join(entry, "package"), nil
}

// Ensure makes the cache entry entry exist, with sub inside it, at most once
// per machine. If entry/sub is missing it takes the entry's file lock, checks
// again (another process may have filled it meanwhile), and runs build, which
// must create out (and out/sub) using scratch for anything else. out then
// becomes entry in one rename, so no reader ever sees a half-built entry.
func Ensure(ctx context.Context, entry, sub string, build func(ctx context.Context, scratch, out string) error) (err error) {
	if isDir(filepath.Join(entry, sub)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, entry+".lock")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlock()) }()
	if isDir(filepath.Join(entry, sub)) {
		return nil
	}
	// Builds that were killed leave their temporary directories behind.
	stale, err := filepath.Glob(filepath.Join(filepath.Dir(entry), ".tmp-"+filepath.Base(entry)+"-*"))
	if err != nil {
		return err
	}
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing a stale temporary directory: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(entry), ".tmp-"+filepath.Base(entry)+"-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing temporary directory: %w", rmErr))
		}
	}()
	scratch, out := filepath.Join(tmp, "scratch"), filepath.Join(tmp, "out")
	if err := os.Mkdir(scratch, 0o755); err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if err := build(ctx, scratch, out); err != nil {
		return err
	}
	// A leftover entry without sub (made by hand, or by an older layout)
	// would block the rename.
	if err := os.RemoveAll(entry); err != nil {
		return fmt.Errorf("removing stale entry: %w", err)
	}
	if err := os.Rename(out, entry); err != nil {
		return fmt.Errorf("publishing entry: %w", err)
	}
	return nil
}

// npmPack runs `npm pack spec` with dir as the pack destination.
func npmPack(ctx context.Context, spec, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "npm", "pack", spec, "--silent", "--pack-destination", dir)
	cmd.Dir = dir
	out, err := Run(cmd)
	if err != nil {
		return "", err
	}
	tarballs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", spec, err)
	}
	if len(tarballs) != 1 {
		return "", fmt.Errorf("npm pack %s: want one tarball in %s, found %d (stdout: %q)",
			spec, dir, len(tarballs), strings.TrimSpace(out))
	}
	return tarballs[0], nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
