package app

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestReadCommands runs `argosy app status` against the read API serving
// readtest.Fleet and compares its output with a golden file.
func TestReadCommands(t *testing.T) {
	cmdtest.ReadCommands(t, NewCmdApp, cmdtest.ReadServer(t, readtest.Fleet()), []cmdtest.Golden{
		{File: "app-status.txt", Args: []string{"app", "status"}},
		{File: "app-status-cluster.txt", Args: []string{"app", "status", "--cluster", "prod-eu"}},
		{File: "app-status-name.json", Args: []string{"app", "status", "billing", "-n", "argocd", "-o", "json"}},
	})
}

// TestReadCommandErrors checks what `argosy app status` says when the
// server refuses or it is given badly.
func TestReadCommandErrors(t *testing.T) {
	server := cmdtest.ReadServer(t, readtest.Fleet())
	cmdtest.ReadCommandErrors(t, NewCmdApp, []cmdtest.Failure{
		{Args: []string{"app", "status", "--cluster", "nope", "--server", server}, Text: `cluster "nope" not found`},
		{Args: []string{"app", "status", "ghost", "--cluster", "prod-eu", "--server", server}, Text: `no Application "ghost" on cluster "prod-eu"`},
		{Args: []string{"app", "status", "a", "b"}, FlagError: true, Text: "accepts at most 1 arg(s)"},
	})
}

func TestReadCommandsHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdApp, []string{"app", "status"})
}

func TestAppStatusAndClusterGetFlags(t *testing.T) {
	t.Setenv(apicmd.EnvServer, "")
	app, err := cmdtest.Parse(t, NewCmdAppStatus, []string{"guestbook", "--cluster", "prod-eu", "--namespace", "argocd", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := AppStatusOptions{Output: "json", Cluster: "prod-eu", Namespace: "argocd",
		Name: "guestbook"}
	if diff := cmp.Diff(want, *app, cmpopts.IgnoreUnexported(apicmd.Options{}), cmpopts.IgnoreFields(AppStatusOptions{}, "IO")); diff != "" {
		t.Errorf("app status (-want +got):\n%s", diff)
	}
}

// TestAppStatusOfHostileSpecs: Applications whose desired or published
// spec is nested 9,998 levels deep are listed, with a note for each spec
// the read API left out and why; -o json prints the marker in its place.
func TestAppStatusOfHostileSpecs(t *testing.T) {
	server := cmdtest.ReadServer(t, readtest.Hostile())
	stdout, stderr, err := cmdtest.Run(t, NewCmdApp, "app", "status", "--cluster", "prod-eu", "--server", server)
	if err != nil {
		t.Fatalf("argosy app status: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "prod-eu  argocd     guestbook") || !strings.Contains(stdout, "prod-eu  argocd     billing") {
		t.Errorf("the listing lacks an Application:\n%s", stdout)
	}
	for _, want := range []string{
		"Note: the spec the hub wants for argocd/guestbook on prod-eu (generation 3) is too deep to show: 9998 levels, 60069 bytes (the read API answers with specs up to 100 levels deep)",
		"Note: the spec prod-eu published for argocd/billing is too deep to show: 9998 levels, 60069 bytes",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	stdout, _, err = cmdtest.Run(t, NewCmdApp, "app", "status", "guestbook", "--cluster", "prod-eu", "--server", server, "-o", "json")
	if err != nil || !strings.Contains(stdout, `"$omitted": {`) || !strings.Contains(stdout, `"reason": "depth"`) {
		t.Errorf("argosy app status -o json: %v\n%s", err, stdout)
	}
}
