// Package cluster is `argosy cluster`, the commands about clusters:
// `cluster get`, from the read API; `cluster list`, the hub's
// registrations; and the writes `cluster register`, `cluster label` and
// `cluster deregister`, through the hub's API.
package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// NewCmdCluster returns `argosy cluster`, the commands about clusters.
func NewCmdCluster(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register, label, list and inspect clusters",
		Long: `Register clusters with the hub, change their labels, deregister them, list
the hub's registrations (cluster list), and show one cluster as the read API
sees it (cluster get: its heartbeat and connection). argosy fleet lists
every cluster with its connection and its Applications' health.`,
	}
	cmd.AddCommand(NewCmdClusterGet(io, nil), NewCmdClusterList(io, nil), NewCmdClusterRegister(io, nil),
		NewCmdClusterLabel(io, nil), NewCmdClusterDeregister(io, nil))
	return cmd
}

// ClusterGetOptions are the flags and argument of `argosy cluster get`.
type ClusterGetOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
	Name   string
}

// NewCmdClusterGet returns `argosy cluster get`.
func NewCmdClusterGet(io cmdkit.IOStreams, runF func(context.Context, *ClusterGetOptions) error) *cobra.Command {
	opts := &ClusterGetOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a cluster's registration, last heartbeat and connection",
		Example: `  argosy cluster get prod-eu
  argosy cluster get prod-eu -o yaml`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterGetRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.API, api.KindClusters, nil)
	return cmd
}

func clusterGetRun(ctx context.Context, opts *ClusterGetOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	cl, err := c.Cluster(ctx, opts.Name)
	if err != nil {
		return opts.API.Explain(err)
	}
	if opts.Output != "table" {
		return cmdkit.PrintOut(opts.IO.Out, opts.Output, cl, nil, nil)
	}
	fields := [][2]string{{"Name", cl.Name}, {"Connected", cmdkit.YesNo(cl.Connected)}}
	if r := cl.Registration; r != nil {
		fields = append(fields, [2]string{"Registered", cmdkit.YesNo(r.Registered) + ", " + cmdkit.Stamp(r.RegisteredAt)},
			[2]string{"Labels", cmdkit.Pairs(r.Labels)})
	}
	fields = append(fields, [2]string{"Applications", strconv.Itoa(cl.Applications)})
	if b := cl.Beat; b != nil {
		fields = append(fields,
			[2]string{"Last heartbeat", fmt.Sprintf("%s (seq %d)", cmdkit.Stamp(b.At), b.Seq)},
			[2]string{"Mode", cmdkit.OrDash(b.Mode)},
			[2]string{"Agent", cmdkit.OrDash(b.AgentVersion)},
			[2]string{"Argo CD", cmdkit.OrDash(b.ArgoCDVersion)},
			[2]string{"By sync", cmdkit.Pairs(b.BySync)},
			[2]string{"By health", cmdkit.Pairs(b.ByHealth)},
			[2]string{"Config offset", fmt.Sprintf("%d (lag %d)", b.ConfigOffset, b.ConfigLag)})
	} else {
		fields = append(fields, [2]string{"Last heartbeat", "never"})
	}
	return cmdkit.PrintFields(opts.IO.Out, fields)
}
