package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// AppPlacementsOptions are the flags and argument of `argosy app
// placements`.
type AppPlacementsOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
	Name   string
}

// NewCmdAppPlacements returns `argosy app placements`. runF replaces the
// behaviour in tests.
func NewCmdAppPlacements(io cmdkit.IOStreams, runF func(context.Context, *AppPlacementsOptions) error) *cobra.Command {
	opts := &AppPlacementsOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "placements [NAME]",
		Short: "Show where each placement (app apply --selector) has put its Application",
		Long: `Show each placement the hub holds (GET /api/v1/placements), or NAME's, and
its Application on every cluster it matches or is still removing it from:

  placed     the cluster's Application is the placement's current generation
  placing    the hub is writing it there
  pruning    the cluster stopped matching (or the placement was deleted)
  conflict   an Application of that name, which the placement did not
             place, is there: the placement leaves it alone

Whether a cluster has applied it is argosy app status's.`,
		Example: `  argosy app placements
  argosy app placements guestbook -o yaml`,
		Args: cmdkit.UsageArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appPlacementsRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	return cmd
}

func appPlacementsRun(ctx context.Context, opts *AppPlacementsOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	ps, err := c.Placements(ctx)
	if err != nil {
		return apicmd.Explain(&opts.API, err)
	}
	out := ps[:0]
	for _, p := range ps {
		if opts.Name == "" || p.Name == opts.Name {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		if opts.Name != "" {
			return fmt.Errorf("no placement %q; argosy app placements lists them", opts.Name)
		}
		fmt.Fprintln(opts.IO.Err, "No placements.")
		return nil
	}
	var rows [][]string
	for _, p := range out {
		for _, pc := range p.Clusters {
			rows = append(rows, []string{p.Namespace + "/" + p.Name, p.Selector, strconv.FormatInt(p.Generation, 10), pc.Cluster, pc.State})
		}
		if len(p.Clusters) == 0 {
			rows = append(rows, []string{p.Namespace + "/" + p.Name, p.Selector, strconv.FormatInt(p.Generation, 10), "-", "no cluster matches"})
		}
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, out, []string{"PLACEMENT", "SELECTOR", "GENERATION", "CLUSTER", "STATE"}, rows)
}

// deletePlacement is app delete NAME --placement.
func deletePlacement(ctx context.Context, opts *AppDeleteOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	res, err := s.Write(ctx, opts.IfGeneration, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.DeletePlacement(ctx, opts.Namespace, opts.Name, o)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}

var errPlacementCluster = errors.New("--placement deletes the placement from every cluster it placed on: give no --cluster")
