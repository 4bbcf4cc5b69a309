package cluster

import (
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestReadCommands runs `argosy cluster get` against the read API serving
// readtest.Fleet and compares its output with a golden file.
func TestReadCommands(t *testing.T) {
	cmdtest.ReadCommands(t, NewCmdCluster, cmdtest.ReadServer(t, readtest.Fleet()), []cmdtest.Golden{
		{File: "cluster-get.txt", Args: []string{"cluster", "get", "prod-eu"}},
		{File: "cluster-get-staging.txt", Args: []string{"cluster", "get", "staging"}},
		{File: "cluster-get.yaml", Args: []string{"cluster", "get", "prod-us", "-o", "yaml"}},
	})
}

// TestReadCommandErrors checks what `argosy cluster get` says when the
// server refuses or it is given badly.
func TestReadCommandErrors(t *testing.T) {
	server := cmdtest.ReadServer(t, readtest.Fleet())
	cmdtest.ReadCommandErrors(t, NewCmdCluster, []cmdtest.Failure{
		{Args: []string{"cluster", "get", "nope", "--server", server}, Text: `server answered 404 Not Found: cluster "nope" not found`},
		{Args: []string{"cluster", "get"}, FlagError: true, Text: "accepts 1 arg(s), received 0"},
		{Args: []string{"cluster", "get", "a", "b"}, FlagError: true, Text: "accepts 1 arg(s), received 2"},
	})
}

func TestReadCommandsHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdCluster, []string{"cluster", "get"})
}

func TestAppStatusAndClusterGetFlags(t *testing.T) {
	t.Setenv(apicmd.EnvServer, "")
	cl, err := cmdtest.Parse(t, NewCmdClusterGet, []string{"prod-eu", "--server", "https://argosy.example.com"})
	if err != nil || cl.Name != "prod-eu" || cl.API.Server != "https://argosy.example.com" || cl.Output != "table" {
		t.Errorf("cluster get: %+v, %v", cl, err)
	}
}
