// Package cli is the argosy-dev command and its composition root: the
// whole system in one process (the embedded broker, the hub, read API,
// dashboard and fold of package system, and the simulated fleet of
// package sim), which argosy dev runs. It is a binary of its own so that
// the release argosy-hub links neither the embedded broker nor the
// simulation nor the agent.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// NewRoot returns the argosy-dev root command: the dev command itself,
// with version beside it.
func NewRoot(io cmdkit.IOStreams) *cobra.Command {
	root := NewCmdDev(io, nil)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
	root.AddCommand(cmdkit.NewCmdVersion(io, "argosy-dev", "json", nil))
	return root
}
