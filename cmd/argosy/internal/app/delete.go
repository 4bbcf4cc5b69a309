package app

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// AppDeleteOptions are the flags and argument of `argosy app delete`.
type AppDeleteOptions struct {
	IO           cmdkit.IOStreams
	Write        apicmd.WriteFlags
	Name         string
	Cluster      string
	Namespace    string
	Cascade      bool
	IfGeneration *int64
	// Placement is --placement: delete the placement NAME.
	Placement bool
}

// NewCmdAppDelete returns `argosy app delete`. runF replaces the behaviour
// in tests.
func NewCmdAppDelete(io cmdkit.IOStreams, runF func(context.Context, *AppDeleteOptions) error) *cobra.Command {
	opts := &AppDeleteOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "delete NAME --cluster CLUSTER",
		Short: "Delete an Application from a cluster",
		Long: `Delete the Application NAME (in --namespace, default argocd) from --cluster.
With --cascade (the default) the cluster's Argo CD deletes the resources the
Application manages too; --cascade=false leaves them in place.

--placement deletes the placement NAME (argosy app apply --selector)
instead: the hub removes its Application from every cluster it placed it
on, by the placement's prune policy.

Deleting needs a deployer token.
` + apicmd.WriteHelp,
		Example: `  argosy app delete guestbook --cluster prod-eu
  argosy app delete guestbook --cluster prod-eu --cascade=false --if-generation 4
  argosy app delete guestbook --cluster staging -n apps --dry-run
  argosy app delete guestbook --placement`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			switch {
			case opts.Placement && opts.Cluster != "":
				return &cmdkit.FlagError{Err: errPlacementCluster}
			case opts.Cluster == "" && !opts.Placement:
				return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster to delete it from (or --placement, to delete a placement)")}
			}
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if opts.Placement {
				return deletePlacement(c.Context(), opts)
			}
			return appDeleteRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	f := cmd.Flags()
	f.StringVar(&opts.Cluster, "cluster", "", "the cluster to delete it from (required)")
	f.StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "the Application's namespace")
	f.BoolVar(&opts.Cascade, "cascade", true, "delete the resources the Application manages too")
	f.BoolVar(&opts.Placement, "placement", false, "delete the placement NAME (app apply --selector): its Applications go from every cluster by its prune policy")
	apicmd.AddGenerationFlag(cmd, &gen, "the Application")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindApplications, &opts.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func appDeleteRun(ctx context.Context, opts *AppDeleteOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	res, err := s.Write(ctx, opts.IfGeneration, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.Delete(ctx, api.KindApplications, opts.Cluster, opts.Namespace, opts.Name, opts.Cascade, o)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}
