package toolcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MavenJars returns a directory holding the runtime jars of the Maven project
// pom, resolved by `mvn dependency:copy-dependencies` (which needs Maven and
// Java on PATH and Maven Central reachable) into <root>/maven/<name>-<hash>,
// where hash covers pom, so that changing a version resolves afresh. Maven's
// own repository (~/.m2) keeps the downloads as well.
func MavenJars(ctx context.Context, name string, pom []byte) (dir string, err error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pom)
	entry := filepath.Join(root, "maven", name+"-"+hex.EncodeToString(sum[:6]))
	lib := filepath.Join(entry, "lib")
	if isDir(lib) {
		return lib, nil
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return "", fmt.Errorf("maven %s: %w", name, err)
	}
	unlock, err := lockFile(ctx, entry+".lock")
	if err != nil {
		return "", fmt.Errorf("maven %s: %w", name, err)
	}
	defer func() { err = errors.Join(err, unlock()) }()
	if isDir(lib) { // another process resolved it while we waited
		return lib, nil
	}
	if err := resolveMaven(ctx, entry, pom); err != nil {
		return "", fmt.Errorf("maven %s: %w", name, err)
	}
	return lib, nil
}

// resolveMaven copies the jars into a temporary directory beside entry, then
// renames it to entry. The caller holds the entry's lock.
func resolveMaven(ctx context.Context, entry string, pom []byte) (err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(entry), ".tmp-"+filepath.Base(entry)+"-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing temporary directory: %w", rmErr))
		}
	}()
	work := filepath.Join(tmp, "entry")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), pom, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(work, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(work, "lib"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mvn dependency:copy-dependencies: %w: %s", err, lastLines(out.String(), 20))
	}
	jars, err := filepath.Glob(filepath.Join(work, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return fmt.Errorf("mvn resolved no jars: %w", errors.Join(err, errors.New(lastLines(out.String(), 20))))
	}
	if err := os.RemoveAll(entry); err != nil {
		return fmt.Errorf("removing stale entry: %w", err)
	}
	if err := os.Rename(work, entry); err != nil {
		return fmt.Errorf("publishing entry: %w", err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
