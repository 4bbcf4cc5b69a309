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
	if err := Ensure(ctx, entry, "lib", func(ctx context.Context, _, out string) error {
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
	// -C: fail on a checksum mismatch rather than warn.
	log, err := Run(exec.CommandContext(ctx, "mvn", "-B", "-q", "-C", "-f", filepath.Join(out, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(out, "lib")))
	if err != nil {
		return err
	}
	jars, err := filepath.Glob(filepath.Join(out, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return fmt.Errorf("mvn resolved no jars: %w", errors.Join(err, errors.New(LastLines(log, 20))))
	}
	return nil
}

// Run runs cmd and returns its combined output; a failure quotes the
// output's last lines.
func Run(cmd *exec.Cmd) (string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args[:min(2, len(cmd.Args))], " "), err, LastLines(out.String(), 20))
	}
	return out.String(), nil
}

// LastLines returns the last n lines of s, for error messages that quote a
// tool's output.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
