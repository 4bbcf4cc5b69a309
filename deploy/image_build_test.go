//go:build integration

package deploy_test

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// imageUID is the user the images run as (the Dockerfile's USER).
const imageUID = 65532

// dockerBuild returns the Dockerfile's go build command and its
// environment (ENV lines before it), with the ARGs filled in and the output
// directory replaced by out.
func dockerBuild(t *testing.T, out string) (args, env []string) {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ENV "); ok {
			env = append(env, strings.Fields(v)...)
		}
		if cmd, ok := strings.CutPrefix(line, "RUN go build "); ok {
			cmd = strings.NewReplacer("${VERSION}", "v0.0.0-image-test", "${COMMIT}", "test", " -o /out/ ", " -o "+out+"/ ").Replace(cmd)
			for _, m := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(cmd, -1) {
				args = append(args, strings.Trim(m, `"`))
			}
			return append([]string{"build"}, args...), env
		}
	}
	t.Fatalf("no go build line in the Dockerfile (%v)", sc.Err())
	return nil, nil
}

// TestImageBinaries builds the images' binaries with the Dockerfile's own
// build line (no Docker engine runs here) and checks what the images
// promise: every binary is static, and the whole system runs as UID 65532
// with the root filesystem mounted read-only, writing only its data
// directory, as the chart runs it. The whole system is argosy-dev (broker,
// hub, projector and a simulated fleet of spoke agents, on package
// system as argosy-hub run is), built with the same line: the images do
// not carry it, so that the release argosy-hub links no embedded broker and
// no simulation.
func TestImageBinaries(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	args, env := dockerBuild(t, bin)
	if !strings.Contains(strings.Join(env, " "), "CGO_ENABLED=0") {
		t.Fatalf("the Dockerfile builds with %v: want CGO_ENABLED=0", env)
	}
	build := exec.CommandContext(t.Context(), "go", append(args, "./cmd/argosy-dev")...)
	build.Dir = ".."
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, name := range []string{"argosy", "argosy-hub", "argosy-spoke", "argosy-dev"} {
		if err := static(filepath.Join(bin, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The data directory is the one writable volume.
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir, bin} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(data, imageUID, imageUID); err != nil {
		t.Fatalf("the test runs the binaries as UID %d, which needs root: %v", imageUID, err)
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	hub := []string{filepath.Join(bin, "argosy-dev"), "--data-dir", data, "--clusters", "3", "--quiet",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1])}
	p, err := testproc.Start(dir, "argosy-dev", "unshare", readOnlyRoot(data, hub), []string{"HOME=/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Errorf("%v\n%s", err, p.LogTail())
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var b []byte
	if err := p.WaitFor(ctx, func(context.Context) (err error) {
		b, err = os.ReadFile(filepath.Join(data, "dev.json")) // written once it serves
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitStatus(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), 200, time.Minute); err != nil {
		t.Fatal(err)
	}
	var ready struct{ Clusters []string }
	if err := json.Unmarshal(b, &ready); err != nil || len(ready.Clusters) != 3 {
		t.Errorf("dev.json %s: %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(data, "dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(interface{ Uid() uint32 }); ok && st.Uid() != imageUID {
		t.Errorf("dev.json belongs to UID %d", st.Uid())
	}
}

// readOnlyRoot returns unshare's arguments that run cmd in a mount
// namespace of its own, where / is read-only and only data is writable, as
// UID and GID 65532 with no other groups.
func readOnlyRoot(data string, cmd []string) []string {
	script := fmt.Sprintf(`mount --bind %[1]q %[1]q && mount -o remount,bind,ro / && exec setpriv --reuid=%[2]d --regid=%[2]d --clear-groups "$@"`, data, imageUID)
	return append([]string{"--mount", "sh", "-c", script, "sh"}, cmd...)
}

// static reports an error unless path is a statically linked executable:
// no program interpreter, no shared libraries.
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (it has a program interpreter)")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	if len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v", libs)
	}
	return nil
}
