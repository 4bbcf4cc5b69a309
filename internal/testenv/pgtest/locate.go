package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EnvBin names the variable that points at a directory holding initdb and
// postgres, for systems that do not install them where Debian does (for
// example ARGOSY_PG_BIN=$(pg_config --bindir)). When it is set, nothing else
// is searched.
const EnvBin = "ARGOSY_PG_BIN"

// debianRoot holds one directory per installed major version, each with a
// bin directory: Debian keeps the server binaries off PATH.
const debianRoot = "/usr/lib/postgresql"

// installHint says how to get the server binaries.
const installHint = "run `make test-tools` (on Debian, as root, it runs apt-get install postgresql), " +
	"or install PostgreSQL's server and set " + EnvBin + " to the directory holding initdb and postgres"

// Binaries are the paths of the PostgreSQL server programs.
type Binaries struct {
	Initdb, Postgres string
}

// Locate finds initdb and postgres: in $ARGOSY_PG_BIN when it is set,
// otherwise in /usr/lib/postgresql/<major>/bin, newest major first. Its
// error says how to install them.
func Locate() (Binaries, error) {
	return locate(os.Getenv(EnvBin), debianRoot)
}

func locate(override, root string) (Binaries, error) {
	if override != "" {
		// Absolute, as the programs run in the server's directory.
		dir, err := filepath.Abs(override)
		if err != nil {
			return Binaries{}, fmt.Errorf("%s: %w", EnvBin, err)
		}
		b, err := inDir(dir)
		if err != nil {
			return Binaries{}, fmt.Errorf("%s=%s: %w: %s", EnvBin, override, err, installHint)
		}
		return b, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Binaries{}, fmt.Errorf("look for PostgreSQL: %w", err)
	}
	var majors []string
	for _, e := range entries {
		if _, ok := majorVersion(e.Name()); ok && e.IsDir() {
			majors = append(majors, e.Name())
		}
	}
	slices.SortFunc(majors, func(a, b string) int {
		va, _ := majorVersion(a)
		vb, _ := majorVersion(b)
		return slices.Compare(vb, va) // newest first
	})
	for _, m := range majors {
		if b, err := inDir(filepath.Join(root, m, "bin")); err == nil {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("PostgreSQL's server (initdb and postgres) is not installed: none in %s/*/bin; %s",
		root, installHint)
}

// majorVersion parses a directory name such as "15" or "9.6".
func majorVersion(name string) ([]int, bool) {
	var v []int
	for _, part := range strings.Split(name, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}

// inDir returns the binaries in dir, or an error naming the first missing.
func inDir(dir string) (Binaries, error) {
	b := Binaries{Initdb: filepath.Join(dir, "initdb"), Postgres: filepath.Join(dir, "postgres")}
	for _, p := range []string{b.Initdb, b.Postgres} {
		fi, err := os.Stat(p)
		if err != nil {
			return Binaries{}, fmt.Errorf("no %s: %w", filepath.Base(p), err)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("%s is not an executable file", p)
		}
	}
	return b, nil
}
