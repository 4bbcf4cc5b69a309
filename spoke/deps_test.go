package spoke_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSpokeBinaryDoesNotLinkArgoCD keeps the agent small: importing Argo CD's
// types alone costs 1,211 packages and 85 MB of RSS at start-up.
func TestSpokeBinaryDoesNotLinkArgoCD(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/argosyproj/argosy/cmd/argosy-spoke").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/argoproj/argo-cd") {
			t.Errorf("argosy-spoke links %s", d)
		}
	}
}
