//go:build integration

package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
)

// devOnly are the packages argosy dev needs and the release argosy-hub
// must not link: franz-go's in-memory broker, the simulated fleet, the
// agent, and the test servers and rigs.
var devOnly = []string{"github.com/twmb/franz-go/pkg/kfake", "github.com/argosyproj/argosy/sim", "github.com/argosyproj/argosy/spoke",
	"github.com/argosyproj/argosy/internal/testenv", "github.com/argosyproj/argosy/hub/hubtest"}

// linked lists the packages of devOnly that pkg links.
func linked(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var got []string
	for _, d := range strings.Fields(string(out)) {
		if slices.ContainsFunc(devOnly, func(p string) bool { return d == p || strings.HasPrefix(d, p+"/") }) {
			got = append(got, d)
		}
	}
	return got
}

// TestReleaseHubLinksNoDevCode: argosy-hub, the binary of the images and
// the chart, links neither the embedded broker nor the simulation nor the
// agent; argosy-dev, which argosy dev runs, links them, or the check
// proves nothing.
func TestReleaseHubLinksNoDevCode(t *testing.T) {
	if got := linked(t, "github.com/argosyproj/argosy/cmd/argosy-hub"); len(got) > 0 {
		t.Errorf("argosy-hub links %v", got)
	}
	got := linked(t, "github.com/argosyproj/argosy/cmd/argosy-dev")
	for _, want := range devOnly[:3] {
		if !slices.Contains(got, want) {
			t.Errorf("argosy-dev does not link %s: %v", want, got)
		}
	}
}

// TestReleaseHubHasNoCrashHook builds argosy-hub as a release does, without
// the argosy_testhooks tag, and checks that no fault hook came along: the
// name of its setting, cli.EnvCrash, is not in its bytes. The tagged build,
// which the kill tests run, must have it, or the check proves nothing.
func TestReleaseHubHasNoCrashHook(t *testing.T) {
	release := filepath.Join(t.TempDir(), "argosy-hub")
	if out, err := exec.Command("go", "build", "-o", release, "github.com/argosyproj/argosy/cmd/argosy-hub").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		bin  string
		want bool
	}{
		{release, false},
		{buildHub(t), true},
	} {
		b, err := os.ReadFile(tc.bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte(cli.EnvCrash)); got != tc.want {
			t.Errorf("%s holds %s: %v, want %v", tc.bin, cli.EnvCrash, got, tc.want)
		}
	}
}
