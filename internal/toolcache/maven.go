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
func MavenJars(ctx context.Context, name string, pom []byte) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pom)
	entry := filepath.Join(root, "maven", name+"-"+hex.EncodeToString(sum[:6]))
	if err := ensure(ctx, entry, "lib", func(ctx context.Context, _, out string) error {
		return resolveMaven(ctx, out, pom)
	}); err != nil {
		return "", fmt.Errorf("maven %s: %w", name, err)
	}
	return filepath.Join(entry, "lib"), nil
}

// resolveMaven writes pom into out and copies the project's runtime jars to
// out/lib.
func resolveMaven(ctx context.Context, out string, pom []byte) error {
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "pom.xml"), pom, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(out, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(out, "lib"))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mvn dependency:copy-dependencies: %w: %s", err, lastLines(log.String(), 20))
	}
	jars, err := filepath.Glob(filepath.Join(out, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return fmt.Errorf("mvn resolved no jars: %w", errors.Join(err, errors.New(lastLines(log.String(), 20))))
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
