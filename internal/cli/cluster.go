package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

// NewCmdCluster returns `argosy cluster`, the commands about one cluster.
func NewCmdCluster(io IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect one cluster",
	}
	cmd.AddCommand(NewCmdClusterGet(io, nil))
	return cmd
}

// ClusterGetOptions are the flags and argument of `argosy cluster get`.
type ClusterGetOptions struct {
	IO     IOStreams
	API    APIOptions
	Output string
	Name   string
}

// NewCmdClusterGet returns `argosy cluster get`.
func NewCmdClusterGet(io IOStreams, runF func(context.Context, *ClusterGetOptions) error) *cobra.Command {
	opts := &ClusterGetOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a cluster's registration, last heartbeat and connection",
		Example: `  argosy cluster get prod-eu
  argosy cluster get prod-eu -o yaml`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterGetRun(c.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addAPIFlags(cmd, &opts.API)
	return cmd
}

func clusterGetRun(ctx context.Context, opts *ClusterGetOptions) error {
	c, err := opts.API.client()
	if err != nil {
		return err
	}
	cl, err := c.Cluster(ctx, opts.Name)
	if err != nil {
		return err
	}
	if opts.Output != "table" {
		return printOut(opts.IO.Out, opts.Output, cl, nil, nil)
	}
	fields := [][2]string{{"Name", cl.Name}, {"Connected", yesNo(cl.Connected)}}
	if r := cl.Registration; r != nil {
		fields = append(fields, [2]string{"Registered", yesNo(r.Registered) + ", " + stamp(r.RegisteredAt)},
			[2]string{"Labels", pairs(r.Labels)})
	}
	fields = append(fields, [2]string{"Applications", strconv.Itoa(cl.Applications)})
	if b := cl.Beat; b != nil {
		fields = append(fields,
			[2]string{"Last heartbeat", fmt.Sprintf("%s (seq %d)", stamp(b.At), b.Seq)},
			[2]string{"Mode", orDash(b.Mode)},
			[2]string{"Agent", orDash(b.AgentVersion)},
			[2]string{"Argo CD", orDash(b.ArgoCDVersion)},
			[2]string{"By sync", pairs(b.BySync)},
			[2]string{"By health", pairs(b.ByHealth)},
			[2]string{"Config offset", fmt.Sprintf("%d (lag %d)", b.ConfigOffset, b.ConfigLag)})
	} else {
		fields = append(fields, [2]string{"Last heartbeat", "never"})
	}
	return printFields(opts.IO.Out, fields)
}
