package app

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// AppGetOptions are the flags and argument of `argosy app get`.
type AppGetOptions struct {
	IO        cmdkit.IOStreams
	API       apicmd.Options
	Output    string
	Name      string
	Cluster   string
	Namespace string
}

// AppView is one cluster's Application as app get prints it: the hub's
// latest word on it, and its cluster's report, when the read API has one.
type AppView struct {
	// Hub is the hub's latest event about the Application.
	Hub api.Object `json:"hub"`
	// Status is what its cluster last reported.
	Status *projector.AppObserved `json:"status,omitempty"`
	// ClusterState is its cluster's freshness (read.FreshnessOf): while it
	// is not Connected, Status is as old as HeartbeatAgeSeconds.
	ClusterState        string `json:"clusterState,omitempty"`
	HeartbeatAgeSeconds *int64 `json:"heartbeatAgeSeconds,omitempty"`
}

// NewCmdAppGet returns `argosy app get`. runF replaces the behaviour in
// tests.
func NewCmdAppGet(io cmdkit.IOStreams, runF func(context.Context, *AppGetOptions) error) *cobra.Command {
	opts := &AppGetOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an Application on each cluster: the generation the hub wants and the one applied, sync and health",
		Long: `Show the Application NAME on each cluster the hub has it for (of --cluster,
in --namespace, if given): the hub's latest word on it (GET /api/v1/objects),
joined with what its cluster reported, from the read API the hub serves
beside its own.

GENERATION is the generation the cluster applied over the one the hub
wants: what --if-generation compares is the second. STATE is as argosy app
status says. When the hub serves no read API, SYNC, HEALTH and STATE are
unknown and a note says so.`,
		Example: `  argosy app get guestbook
  argosy app get guestbook --cluster prod-eu -o yaml`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appGetRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "only on this cluster")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", "", "only in this namespace (default: any)")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.API, api.KindApplications, &opts.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.API))
	return cmd
}

func appGetRun(ctx context.Context, opts *AppGetOptions) error {
	hc, err := opts.API.Client()
	if err != nil {
		return err
	}
	objs, err := hc.Objects(ctx, opts.Cluster, api.KindApplications)
	if err != nil {
		return apicmd.Explain(&opts.API, err)
	}
	var views []AppView
	for _, o := range objs {
		if o.Name == opts.Name && (opts.Namespace == "" || o.Namespace == opts.Namespace) {
			views = append(views, AppView{Hub: o})
		}
	}
	if len(views) == 0 {
		return fmt.Errorf("the hub has no Application %q%s; argosy app list shows those it has", opts.Name, where(opts.Cluster, opts.Namespace))
	}
	known := true
	if err := joinStatus(ctx, opts, views); err != nil {
		known = false
		fmt.Fprintf(opts.IO.Err, "Note: no status from the read API, so SYNC, HEALTH and STATE are unknown: %v\n", err)
	}
	header := []string{"CLUSTER", "NAMESPACE", "NAME", "PROJECT", "SYNC", "HEALTH", "REVISION", "GENERATION", "STATE", "REPORTED"}
	placed := slices.ContainsFunc(views, func(v AppView) bool { return v.Hub.Labels[api.LabelPlacement] != "" })
	if placed {
		header = append(header, "PLACEMENT")
	}
	rows := make([][]string, 0, len(views))
	for _, v := range views {
		row := appRow(v.row())
		if !known {
			row[4], row[5], row[6], row[7], row[8], row[9] = "-", "-", "-", fmt.Sprintf("?/%d", v.Hub.Generation), "unknown", "-"
		}
		if placed {
			row = append(row, placement(v.Hub))
		}
		rows = append(rows, row)
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, views, header, rows)
}

// placement names the placement that wrote an Application, and from which
// of its generations ("guestbook@3"), or "-".
func placement(o api.Object) string {
	name := o.Labels[api.LabelPlacement]
	if name == "" {
		return "-"
	}
	return name + "@" + o.Labels[api.LabelPlacementGeneration]
}

// joinStatus fills in each view's status from the read API.
func joinStatus(ctx context.Context, opts *AppGetOptions, views []AppView) error {
	rc, err := opts.API.Client()
	if err != nil {
		return err
	}
	rows, err := rc.Apps(ctx, projector.AppFilter{Cluster: opts.Cluster, Namespace: opts.Namespace, Name: opts.Name})
	if err != nil {
		return opts.API.Explain(err)
	}
	byKey := map[projector.AppKey]read.App{}
	for _, r := range rows {
		byKey[r.AppKey] = r
	}
	for i := range views {
		h := views[i].Hub
		r := byKey[projector.AppKey{Cluster: h.Cluster, Namespace: h.Namespace, Name: h.Name}]
		views[i].Status, views[i].ClusterState, views[i].HeartbeatAgeSeconds = r.Observed, r.ClusterState, r.HeartbeatAgeSeconds
	}
	return nil
}

// row is the view as app status's row: the hub's word is the desired
// state.
func (v AppView) row() read.App {
	h := v.Hub
	key := projector.AppKey{Cluster: h.Cluster, Namespace: h.Namespace, Name: h.Name}
	return read.App{AppRow: projector.AppRow{AppKey: key, Observed: v.Status,
		Desired: &projector.AppDesired{AppKey: key, Project: h.Project, Labels: h.Labels, Generation: h.Generation, Deleted: h.Deleted, EventID: h.EventID}},
		ClusterState: v.ClusterState, HeartbeatAgeSeconds: v.HeartbeatAgeSeconds}
}
