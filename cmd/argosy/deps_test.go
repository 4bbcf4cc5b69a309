package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArgosyDoesNotLinkArgoCDOrTheHub keeps the CLI small and quick to
// start: Argo CD's module alone costs 1,211 packages and 85 MB of memory at
// start-up (docs/hub.md), and the hub's server links it. The CLI speaks to
// the hub through hub/api, which links neither; `argosy projector`
// authenticates its read API with hub/auth, which links neither either.
// Its tests may start a real hub, which this does not see.
func TestArgosyDoesNotLinkArgoCDOrTheHub(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/argosyproj/argosy/cmd/argosy").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	linksAPI := false
	for _, d := range deps {
		switch {
		case strings.HasPrefix(d, "github.com/argoproj/argo-cd"):
			t.Errorf("argosy links %s", d)
		case d == "github.com/argosyproj/argosy/hub/api":
			linksAPI = true
		case d == "github.com/argosyproj/argosy/hub/auth":
		case d == "github.com/argosyproj/argosy/hub" || strings.HasPrefix(d, "github.com/argosyproj/argosy/hub/"):
			t.Errorf("argosy links the hub's server: %s", d)
		}
	}
	if !linksAPI {
		t.Error("argosy does not link hub/api: is the list of its packages whole?")
	}
}
