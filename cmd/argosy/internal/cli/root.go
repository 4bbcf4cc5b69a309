// Package cli holds the argosy command tree: one file per command, each with
// an Options struct, a NewCmd constructor that binds flags, and a run function
// that does the work, so flag parsing and behaviour are tested apart.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// NewRoot returns the argosy root command.
func NewRoot(io cmdkit.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "argosy",
		Short: "Argosy: an event-sourced control plane for fleets of Argo CD clusters",
		Long: `Argosy keeps the desired state of many Argo CD clusters in Kafka.

Every change is a signed CloudEvent on a Kafka topic; a hub appends changes,
an agent in each cluster applies its own, and projectors fold the log into
views. See docs/design.md for the topics and the event catalogue.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
	root.AddCommand(cmdkit.NewCmdVersion(io, "argosy", "table", nil), NewCmdEvents(io), NewCmdProjector(io, nil), NewCmdFleet(io, nil), NewCmdCluster(io),
		NewCmdApp(io), NewCmdAudit(io, nil), NewCmdReport(io))
	return root
}
