package cluster

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// ClusterDeregisterOptions are the flags and argument of `argosy cluster
// deregister`.
type ClusterDeregisterOptions struct {
	IO           cmdkit.IOStreams
	Write        apicmd.WriteFlags
	Name         string
	Reason       string
	IfGeneration *int64
}

// NewCmdClusterDeregister returns `argosy cluster deregister`. runF
// replaces the behaviour in tests.
func NewCmdClusterDeregister(io cmdkit.IOStreams, runF func(context.Context, *ClusterDeregisterOptions) error) *cobra.Command {
	opts := &ClusterDeregisterOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "deregister NAME",
		Short: "End a cluster's registration and revoke its keys",
		Long: `End the registration of the cluster NAME and revoke its keys: from the
revocation's place in the log on, its events are refused everywhere, the
hub takes no more writes for it, and registering it again needs new keys
(argosy-spoke keygen). Its Argo CD objects are left as they are.

Deregistering needs an admin token.
` + apicmd.WriteHelp,
		Example: `  argosy cluster deregister edge-7 --reason "decommissioned"
  argosy cluster deregister edge-7 --if-generation 4 --dry-run`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterDeregisterRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why, for the log and the keys' revocation")
	apicmd.AddGenerationFlag(cmd, &gen, "the registration")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindClusters, nil)
	return cmd
}

func clusterDeregisterRun(ctx context.Context, opts *ClusterDeregisterOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	res, err := s.Write(ctx, opts.IfGeneration, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.DeregisterCluster(ctx, opts.Name, opts.Reason, o)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}
