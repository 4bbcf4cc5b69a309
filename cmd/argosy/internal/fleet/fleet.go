// Package fleet is `argosy fleet`: every cluster the hub knows, its state
// (Connected or Stale), and its Applications' health, from the read API.
package fleet

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
)

// FleetOptions are the flags of `argosy fleet`.
type FleetOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
}

// NewCmdFleet returns `argosy fleet`. runF replaces the behaviour in tests.
func NewCmdFleet(io cmdkit.IOStreams, runF func(context.Context, *FleetOptions) error) *cobra.Command {
	opts := &FleetOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "List the clusters, whether each is connected or Stale, and their Applications' health",
		Long: `List every cluster the hub knows, from the read API.

STATE is Connected while the cluster's last heartbeat is younger than
three heartbeat intervals, and Stale, with the heartbeat's age, once it is
older: what the cluster last reported may no longer hold, so a Stale
cluster's counts are old news, not its current health. Unknown clusters
never sent a heartbeat; Deregistered ones were deregistered. SYNC and HEALTH count the cluster's Applications by
Argo CD's sync and health status, as its last heartbeat reported them; LAG
is how many config events the cluster has yet to read.`,
		Example: `  argosy fleet
  argosy fleet -o json
  argosy fleet --context prod
  argosy fleet --server https://argosy-projector.argosy:8080 --token "$TOKEN"`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return fleetRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	return cmd
}

func fleetRun(ctx context.Context, opts *FleetOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	clusters, err := c.Clusters(ctx)
	if err != nil {
		return opts.API.Explain(err)
	}
	rows := make([][]string, 0, len(clusters))
	for _, cl := range clusters {
		rows = append(rows, fleetRow(cl))
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, clusters,
		[]string{"NAME", "STATE", "LAST HEARTBEAT", "APPS", "SYNC", "HEALTH", "MODE", "AGENT", "ARGO CD", "LAG"}, rows)
}

func fleetRow(c read.Cluster) []string {
	row := []string{c.Name, read.StateText(c.State, c.HeartbeatAgeSeconds), "-", strconv.Itoa(c.Applications), "-", "-", "-", "-", "-", "-"}
	if b := c.Beat; b != nil {
		row[2], row[4], row[5] = cmdkit.Stamp(b.At), cmdkit.Pairs(b.BySync), cmdkit.Pairs(b.ByHealth)
		row[6], row[7], row[8], row[9] = cmdkit.OrDash(b.Mode), cmdkit.OrDash(b.AgentVersion), cmdkit.OrDash(b.ArgoCDVersion), strconv.FormatInt(b.ConfigLag, 10)
	}
	return row
}
