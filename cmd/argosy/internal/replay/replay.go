// Package replay is `argosy replay`: rebuild the projector's views from
// the log into a new store, compare two stores row by row, and ask the
// log what held on a cluster at a time, and publish a cluster's desired
// state again through the hub; and `argosy export`, the log's
// events written for data platforms.
package replay

import (
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// NewCmdReplay returns `argosy replay` and its subcommands.
func NewCmdReplay(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild views from the log, compare stores, and ask the log about the past",
		Long: `The log is the source of truth: every view the projector serves can be
folded again from it. 'replay rebuild' folds the log into a new store with
the projector's own fold step; 'replay diff' compares two stores row by
row; 'replay as-of' shows what held on a cluster at any time; 'replay
redrive' publishes a cluster's desired state, current or as of a time,
again through the hub, so that a restored cluster converges.
docs/replay.md walks through each, and through swapping a rebuilt store in
for the live one.

They read Kafka directly. What no flag or environment variable gives (the
broker, the topic prefix, the hub's key, --accept-create-time) comes from
the context --context names, else the current one, when it names its log:
argosy dev's context does.`,
	}
	cmd.AddCommand(NewCmdRebuild(io, nil), NewCmdDiff(io, nil), NewCmdAsOf(io, nil), NewCmdRedrive(io, nil))
	return cmd
}
