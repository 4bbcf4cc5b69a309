// Package fleet is `argosy fleet`: every cluster the hub knows, its state
// (Connected or Stale), and its Applications' health, from the read API.
package fleet

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
)

// FleetOptions are the flags of `argosy fleet`.
type FleetOptions struct {
	IO       cmdkit.IOStreams
	API      apicmd.Options
	Output   string
	Selector string
	State    string
	Sort     string
}

// NewCmdFleet returns `argosy fleet`. runF replaces the behaviour in tests.
func NewCmdFleet(io cmdkit.IOStreams, runF func(context.Context, *FleetOptions) error) *cobra.Command {
	opts := &FleetOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "List the clusters, whether each is connected or Stale, and their Applications' health",
		Long: `List every cluster the hub knows, from the read API, after a line that
counts them by state.

STATE is Connected while the cluster's last heartbeat is younger than
three heartbeat intervals, and Stale, with the heartbeat's age, once it is
older: what the cluster last reported may no longer hold, so a Stale
cluster's counts are old news, not its current health. Unknown clusters
never sent a heartbeat; Deregistered ones were deregistered. LAST
HEARTBEAT is how long ago the last heartbeat came. SYNC and HEALTH count
the cluster's Applications by Argo CD's sync and health status, as its
last heartbeat reported them; LAG is how many config events the cluster
has yet to read.

--selector keeps the clusters whose registered labels match a Kubernetes
label selector, --state those in one state; the server filters, so a
large fleet sends only what matches.`,
		Example: `  argosy fleet
  argosy fleet --state Stale
  argosy fleet -l env=prod,region!=eu --sort -heartbeat
  argosy fleet -o json
  argosy fleet --context prod
  argosy fleet --server https://argosy-projector.argosy:8080 --token "$TOKEN"`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if opts.State != "" && !slices.Contains(read.States, opts.State) {
				return &cmdkit.FlagError{Err: fmt.Errorf("--state %q: want one of %s", opts.State, strings.Join(read.States, ", "))}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return fleetRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	cmd.Flags().StringVarP(&opts.Selector, "selector", "l", "", "keep the clusters whose labels match this label selector (env=prod,region in (eu,us))")
	cmd.Flags().StringVar(&opts.State, "state", "", "keep the clusters in this state: "+strings.Join(read.States, ", "))
	cmd.Flags().StringVar(&opts.Sort, "sort", "", "order by name, heartbeat, lag or apps; a leading - reverses (default name)")
	return cmd
}

func fleetRun(ctx context.Context, opts *FleetOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	var page read.FleetPage
	if opts.Selector == "" && opts.State == "" && opts.Sort == "" {
		// Every cluster, as any server version lists them.
		page.Items, err = c.Clusters(ctx)
		page.Total, page.Counts = len(page.Items), map[string]int{}
		for _, cl := range page.Items {
			page.Counts[cl.State]++
		}
	} else {
		page, err = c.Fleet(ctx, read.FleetRequest{Selector: opts.Selector, State: opts.State, Sort: opts.Sort})
	}
	if err != nil {
		return opts.API.Explain(err)
	}
	rows := make([][]string, 0, len(page.Items))
	for _, cl := range page.Items {
		rows = append(rows, fleetRow(cl))
	}
	if opts.Output == "" || opts.Output == "table" {
		fmt.Fprintln(opts.IO.Out, summary(page, opts.State))
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, page.Items,
		[]string{"NAME", "STATE", "LAST HEARTBEAT", "APPS", "SYNC", "HEALTH", "MODE", "AGENT", "ARGO CD", "LAG"}, rows)
}

// summary is the line above the table: how many clusters are listed, and
// how many of those the selector kept are in each state.
func summary(p read.FleetPage, state string) string {
	var all int
	var parts []string
	for _, st := range read.States {
		if n := p.Counts[st]; n > 0 {
			all += n
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	noun := "clusters"
	if all == 1 {
		noun = "cluster"
	}
	line := fmt.Sprintf("%d %s", all, noun)
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	if state != "" {
		line += fmt.Sprintf("; listing the %d %s", p.Total, state)
	}
	return line
}

func fleetRow(c read.Cluster) []string {
	row := []string{c.Name, read.StateText(c.State, c.HeartbeatAgeSeconds), "-", strconv.Itoa(c.Applications), "-", "-", "-", "-", "-", "-"}
	if b := c.Beat; b != nil {
		row[2], row[4], row[5] = ago(c.HeartbeatAgeSeconds), cmdkit.Pairs(b.BySync), cmdkit.Pairs(b.ByHealth)
		row[6], row[7], row[8], row[9] = cmdkit.OrDash(b.Mode), cmdkit.OrDash(b.AgentVersion), cmdkit.OrDash(b.ArgoCDVersion), strconv.FormatInt(b.ConfigLag, 10)
	}
	return row
}

// ago is an age as kubectl writes one ("45s ago", "5m ago", "3h ago").
func ago(seconds *int64) string {
	if seconds == nil {
		return "-"
	}
	return duration.HumanDuration(time.Duration(*seconds)*time.Second) + " ago"
}
