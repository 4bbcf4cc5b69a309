package spoke_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSpokeBinaryDoesNotLinkArgoCD keeps the agent small: importing Argo CD's
// types alone costs 1,211 packages and 85 MB of RSS at start-up, and
// client-go's dynamicinformer (which links every typed informer) took the
// spoke from 46 to 72 MB of binary and 39 to 53 MiB of RSS.
func TestSpokeBinaryDoesNotLinkArgoCD(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/argosyproj/argosy/cmd/argosy-spoke").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	// Argo CD's module, and client-go's typed clientset and informers
	// (with every Kubernetes API group), which the dynamic client does not
	// need: together they would double the binary and its memory.
	banned := []string{"github.com/argoproj/argo-cd", "k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/api/"}
	for _, d := range deps {
		for _, b := range banned {
			if strings.HasPrefix(d, b) {
				t.Errorf("argosy-spoke links %s", d)
			}
		}
	}
}
