package cluster

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// ClusterListOptions are the flags of `argosy cluster list`.
type ClusterListOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
	// Deleted is --deleted: list deregistered clusters too.
	Deleted bool
}

// NewCmdClusterList returns `argosy cluster list`. runF replaces the
// behaviour in tests.
func NewCmdClusterList(io cmdkit.IOStreams, runF func(context.Context, *ClusterListOptions) error) *cobra.Command {
	opts := &ClusterListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the clusters the hub has registered, with their labels and generations",
		Long: `List the clusters the hub has registered (GET /api/v1/objects?kind=clusters):
their labels, the generation of their registration (what --if-generation
and --overwrite compare) and their config partition. A token limited to
some clusters sees only those. argosy fleet shows whether each is connected
and its Applications' health.`,
		Example: `  argosy cluster list
  argosy cluster list --deleted -o yaml`,
		Aliases: []string{"ls"},
		Args:    cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterListRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	cmd.Flags().BoolVar(&opts.Deleted, "deleted", false, "list deregistered clusters too")
	return cmd
}

func clusterListRun(ctx context.Context, opts *ClusterListOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	objs, err := apicmd.List(ctx, c, "", api.KindClusters, opts.Deleted)
	if err != nil {
		return apicmd.Explain(&opts.API, err)
	}
	return apicmd.PrintObjects(opts.IO, opts.Output, api.KindClusters, objs)
}
