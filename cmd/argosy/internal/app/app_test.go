package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/readapi"
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
	t.Setenv(readapi.EnvServer, "")
	app, err := cmdtest.Parse(t, NewCmdAppStatus, []string{"guestbook", "--cluster", "prod-eu", "--namespace", "argocd", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := AppStatusOptions{Output: "json", Cluster: "prod-eu", Namespace: "argocd",
		Name: "guestbook"}
	if diff := cmp.Diff(want, *app, cmpopts.IgnoreUnexported(readapi.Options{}), cmpopts.IgnoreFields(AppStatusOptions{}, "IO")); diff != "" {
		t.Errorf("app status (-want +got):\n%s", diff)
	}
}
