//go:build integration

package projector_test

import (
	"bytes"
	"os"
	"testing"

	projectorcmd "github.com/argosyproj/argosy/cmd/argosy/internal/projector"
)

// TestProductionBinaryHasNoCrashHook builds argosy as a release does,
// without the argosy_testhooks tag, and checks that no fault hook came
// along: not one ARGOSY_TEST_CRASH setting is in its bytes. The tagged
// build, which TestProjectorSurvivesKills runs, must have its hook, or the
// check proves nothing.
func TestProductionBinaryHasNoCrashHook(t *testing.T) {
	for _, tc := range []struct {
		tags string
		want bool
	}{
		{"", false},
		{"argosy_testhooks", true},
	} {
		t.Run("tags="+tc.tags, func(t *testing.T) {
			b, err := os.ReadFile(buildArgosy(t, tc.tags))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte("ARGOSY_TEST_CRASH")); got != tc.want {
				t.Errorf("the binary holds ARGOSY_TEST_CRASH: %v, want %v", got, tc.want)
			}
			if got := bytes.Contains(b, []byte(projectorcmd.EnvCrashAtCommit)); got != tc.want {
				t.Errorf("the binary holds %s: %v, want %v", projectorcmd.EnvCrashAtCommit, got, tc.want)
			}
		})
	}
}
