package toolcache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// pinned is one line of a requirements file PythonVenv accepts: a
// package at exactly one version.
var pinned = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.+!-]*$`)

// PythonVenv returns the interpreter of a Python virtual environment
// holding exactly the packages of requirements, the contents of a
// requirements file whose every line (comments and blank lines aside) pins
// one package to one version, dependencies included. The environment is
// made once per machine with the python3 on PATH (its venv module) and
// pip, which installs the pinned wheels from PyPI with --no-deps and then
// checks with `pip check` that nothing is missing, into
// <root>/python/<name>-<hash>, where hash covers requirements and the
// interpreter's version. A warm call runs python3 once and reaches no
// network.
func PythonVenv(ctx context.Context, name string, requirements []byte) (string, error) {
	if err := checkPinned(requirements); err != nil {
		return "", fmt.Errorf("python %s: %w", name, err)
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	version, err := Run(exec.CommandContext(ctx, "python3", "-c", "import sys; print(sys.version)"))
	if err != nil {
		return "", fmt.Errorf("python %s: python3 (3.10 or later, with its venv module) is needed: %w", name, err)
	}
	h := sha256.New()
	h.Write([]byte(version))
	h.Write(requirements)
	entry := filepath.Join(root, "python", name+"-"+hex.EncodeToString(h.Sum(nil)[:6]))
	if err := Ensure(ctx, entry, "venv", func(ctx context.Context, scratch, out string) error {
		return makeVenv(ctx, scratch, filepath.Join(out, "venv"), requirements)
	}); err != nil {
		return "", fmt.Errorf("python %s: %w", name, err)
	}
	return filepath.Join(entry, "venv", "bin", "python"), nil
}

// checkPinned refuses a requirements file with a line that is not an
// exact pin: a range or a bare name would make the cache key lie.
func checkPinned(requirements []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(requirements))
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !pinned.MatchString(line) {
			return fmt.Errorf("requirements: %q is not name==version", line)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("requirements: no packages")
	}
	return sc.Err()
}

// makeVenv creates a virtual environment at dir and installs
// requirements into it. The environment is moved after it is made, so
// only its interpreter is run, never its scripts (their #! lines name
// where it was made).
func makeVenv(ctx context.Context, scratch, dir string, requirements []byte) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if _, err := Run(exec.CommandContext(ctx, "python3", "-m", "venv", dir)); err != nil {
		return fmt.Errorf("python3 -m venv (on Debian, apt-get install python3-venv): %w", err)
	}
	req := filepath.Join(scratch, "requirements.txt")
	if err := os.WriteFile(req, requirements, 0o644); err != nil {
		return err
	}
	python := filepath.Join(dir, "bin", "python")
	pip := func(args ...string) error {
		_, err := Run(exec.CommandContext(ctx, python, append([]string{"-m", "pip", "--no-input", "--disable-pip-version-check"}, args...)...))
		return err
	}
	if err := pip("install", "--quiet", "--no-deps", "--only-binary=:all:", "-r", req); err != nil {
		return err
	}
	return pip("check")
}
