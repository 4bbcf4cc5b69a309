//go:build integration

package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy-spoke/internal/cli"
)

// TestProductionBinaryHasNoCrashHook builds argosy-spoke as a release does,
// without the argosy_testhooks tag, and checks that no fault hook came
// along: not one ARGOSY_TEST_CRASH setting is in its bytes. The tagged
// build, which the fault tests run, must have its hook, or the check
// proves nothing.
func TestProductionBinaryHasNoCrashHook(t *testing.T) {
	for _, tc := range []struct {
		tags string
		want bool
	}{
		{"", false},
		{"argosy_testhooks", true},
	} {
		t.Run("tags="+tc.tags, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "argosy-spoke")
			buildSpoke(t, bin, tc.tags)
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte("ARGOSY_TEST_CRASH")); got != tc.want {
				t.Errorf("the binary holds ARGOSY_TEST_CRASH: %v, want %v", got, tc.want)
			}
			if got := bytes.Contains(b, []byte(cli.EnvCrashAfterApplies)); got != tc.want {
				t.Errorf("the binary holds %s: %v, want %v", cli.EnvCrashAfterApplies, got, tc.want)
			}
		})
	}
}
