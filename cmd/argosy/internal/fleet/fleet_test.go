package fleet

import (
	"net/http/httptest"
	"testing"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

func newCmd(io cmdkit.IOStreams) *cobra.Command { return NewCmdFleet(io, nil) }

// TestReadCommands runs `argosy fleet` against the read API serving
// readtest.Fleet and compares its output with a golden file.
func TestReadCommands(t *testing.T) {
	cmdtest.ReadCommands(t, newCmd, cmdtest.ReadServer(t, readtest.Fleet()), []cmdtest.Golden{
		{File: "fleet.txt", Args: []string{"fleet"}},
		{File: "fleet.json", Args: []string{"fleet", "-o", "json"}},
		{File: "fleet-selector.txt", Args: []string{"fleet", "-l", "env=prod"}},
		{File: "fleet-stale.txt", Args: []string{"fleet", "--state", "Stale"}},
		{File: "fleet-sorted.txt", Args: []string{"fleet", "--sort", "-name"}},
		{File: "fleet-selector.json", Args: []string{"fleet", "--selector", "region in (eu,us)", "-o", "json"}},
	})
}

// TestReadCommandErrors checks what `argosy fleet` says when the server is
// not there or is given badly.
func TestReadCommandErrors(t *testing.T) {
	down := httptest.NewServer(nil)
	down.Close()
	cmdtest.ReadCommandErrors(t, newCmd, []cmdtest.Failure{
		{Args: []string{"fleet", "--server", down.URL}, Text: "read API: "},
		{Args: []string{"fleet", "--server", "localhost:8080"}, FlagError: true, Text: "--server: "},
		{Args: []string{"fleet", "extra"}, FlagError: true, Text: `unknown command "extra"`},
		{Args: []string{"fleet", "-o", "csv"}, FlagError: true, Text: `unknown output format "csv": want one of table, json, yaml`},
		{Args: []string{"fleet", "--state", "Gone"}, FlagError: true, Text: `--state "Gone": want one of Connected, Stale, Unknown, Deregistered`},
	})
}

func TestReadCommandsHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, newCmd, []string{"fleet"})
}
