// Package app is `argosy app`, the commands about Applications across the
// fleet: `app status`, from the read API; `app list` and `app get`, the
// hub's word joined with the clusters' reports; and the writes `app
// apply`, `app delete` and the operations (sync, refresh, rollback,
// terminate), through the hub's API.
package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// NewCmdApp returns `argosy app`, the commands about Applications.
func NewCmdApp(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "Apply, operate and inspect Applications across the fleet",
		Long: `Apply Argo CD Applications to clusters through the hub, delete them, ask a
cluster's Argo CD to sync, refresh, roll back or terminate one, and see
them: as the hub holds them (list, get), as the clusters report them
(status, get), and live, as a cluster answers (tree, diff, manifests, logs).`,
	}
	cmd.AddCommand(NewCmdAppStatus(io, nil), NewCmdAppList(io, nil), NewCmdAppGet(io, nil), NewCmdAppApply(io, nil), NewCmdAppPlacements(io, nil),
		NewCmdAppDelete(io, nil), NewCmdAppSync(io, nil), NewCmdAppRefresh(io, nil), NewCmdAppRollback(io, nil),
		NewCmdAppTerminate(io, nil), NewCmdAppAdopt(io, nil), NewCmdAppTree(io, nil), NewCmdAppDiff(io, nil), NewCmdAppManifests(io, nil), NewCmdAppLogs(io, nil))
	return cmd
}

// AppStatusOptions are the flags and argument of `argosy app status`.
type AppStatusOptions struct {
	IO        cmdkit.IOStreams
	API       apicmd.Options
	Output    string
	Cluster   string
	Namespace string
	Name      string
}

// NewCmdAppStatus returns `argosy app status`.
func NewCmdAppStatus(io cmdkit.IOStreams, runF func(context.Context, *AppStatusOptions) error) *cobra.Command {
	opts := &AppStatusOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show Applications' sync and health, and whether their cluster applied the newest generation",
		Long: `Show Applications as the hub wants them and as their clusters report them.

Without NAME it lists every Application (of --cluster, if given). SYNC and
HEALTH are Argo CD's; GENERATION is the generation the cluster applied over
the one the hub wants; STATE says what stands between them:
  applied       the cluster applied the newest generation
  pending       the cluster has not acknowledged it yet
  rejected: X   the cluster refused it, with code X
  deleting      the hub deleted the Application; the cluster still has it
  deleted       the hub deleted the Application, and so did the cluster
  unmanaged     the cluster reports an Application the hub does not manage

The views are the projector's fold of the log, a moment behind the hub:
right after an apply, NAME may be the hub's already and not the views'
yet. Then it says so, with the generation the hub holds, rather than that
there is no such Application; argosy app get shows the hub's word at once.`,
		Example: `  argosy app status
  argosy app status --cluster prod-eu
  argosy app status guestbook
  argosy app status guestbook --cluster prod-eu --namespace argocd -o yaml`,
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
			return appStatusRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "only Applications of this cluster")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", "", "only Applications in this namespace")
	return cmd
}

func appStatusRun(ctx context.Context, opts *AppStatusOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	apps, err := c.Apps(ctx, projector.AppFilter{Cluster: opts.Cluster, Namespace: opts.Namespace, Name: opts.Name})
	switch {
	case err != nil && (opts.Name == "" || api.StatusOf(err) != http.StatusNotFound):
		return opts.API.Explain(err)
	case err != nil || len(apps) == 0 && opts.Name != "":
		// The views may not have folded it yet (nor, a 404, its cluster).
		return notInViews(ctx, c, opts, err)
	}
	rows := make([][]string, 0, len(apps))
	for _, a := range apps {
		rows = append(rows, appRow(a))
	}
	if err := cmdkit.PrintOut(opts.IO.Out, opts.Output, apps,
		[]string{"CLUSTER", "NAMESPACE", "NAME", "PROJECT", "SYNC", "HEALTH", "REVISION", "GENERATION", "STATE", "REPORTED"}, rows); err != nil {
		return err
	}
	for _, a := range apps {
		noteOmitted(opts.IO.Err, a)
	}
	return nil
}

// notInViews explains why the fleet views hold no Application opts.Name
// (viewErr is their 404, if they do not know the cluster either): the
// projector folds the log a moment behind the hub, so one applied just now
// may be the hub's already and not the views' yet. The hub's own list
// tells that case from an Application that does not exist.
func notInViews(ctx context.Context, c *api.Client, opts *AppStatusOptions, viewErr error) error {
	missing := fmt.Errorf("no Application %q%s: argosy app list shows those the hub has", opts.Name, where(opts.Cluster, opts.Namespace))
	objs, err := c.Objects(ctx, opts.Cluster, api.KindApplications)
	switch {
	case err != nil && viewErr != nil:
		return opts.API.Explain(viewErr)
	case api.StatusOf(err) == http.StatusNotFound:
		return missing // a read API alone, without the hub's
	case err != nil:
		return fmt.Errorf("%w (and the hub's own list could not be read: %w)", missing, opts.API.Explain(err))
	}
	var applied []string
	ns := opts.Namespace
	for _, o := range objs {
		if o.Name == opts.Name && (opts.Namespace == "" || o.Namespace == opts.Namespace) && !o.Deleted {
			applied, ns = append(applied, fmt.Sprintf("to %s at generation %d", o.Cluster, o.Generation)), o.Namespace
		}
	}
	switch {
	case len(applied) > 0:
		get := "argosy app get " + opts.Name
		if opts.Cluster != "" {
			get += " --cluster " + opts.Cluster
		}
		return fmt.Errorf("%s/%s was applied %s, but the fleet views have not caught up yet (the projector folds the log a moment "+
			"behind); run the command again, or %s shows the hub's word now", ns, opts.Name, strings.Join(applied, " and "), get)
	case viewErr != nil && len(objs) == 0:
		return opts.API.Explain(viewErr) // the hub has nothing on that cluster either
	}
	return missing
}

// noteOmitted says which of an Application's specs the read API left out
// of its answer, and why.
func noteOmitted(w io.Writer, a read.App) {
	if d := a.Desired; d != nil {
		if why := apicmd.Omitted(d.Spec); why != "" {
			fmt.Fprintf(w, "Note: the spec the hub wants for %s/%s on %s (generation %d) is %s\n", a.Namespace, a.Name, a.Cluster, d.Generation, why)
		}
	}
	if o := a.Observed; o != nil && o.Local != nil {
		if why := apicmd.Omitted(o.Local.Spec); why != "" {
			fmt.Fprintf(w, "Note: the spec %s published for %s/%s is %s\n", a.Cluster, a.Namespace, a.Name, why)
		}
	}
}

func where(cluster, namespace string) string {
	switch {
	case cluster != "" && namespace != "":
		return fmt.Sprintf(" in namespace %q of cluster %q", namespace, cluster)
	case cluster != "":
		return fmt.Sprintf(" on cluster %q", cluster)
	case namespace != "":
		return fmt.Sprintf(" in namespace %q", namespace)
	}
	return ""
}

// appRow is an Application's row; its last column says whether its
// cluster's report is current or Stale.
func appRow(a read.App) []string {
	project, sync, health, revision := "-", "-", "-", "-"
	var want, applied int64
	if d := a.Desired; d != nil {
		project, want = cmdkit.OrDash(d.Project), d.Generation
	}
	if o := a.Observed; o != nil {
		applied = o.AppliedGeneration
		if o.Sync != nil {
			sync, revision = cmdkit.OrDash(o.Sync.Status), cmdkit.OrDash(shortRevision(o.Sync.Revision))
		}
		if o.Health != nil {
			health = cmdkit.OrDash(o.Health.Status)
		}
	}
	return []string{a.Cluster, a.Namespace, a.Name, project, sync, health, revision,
		fmt.Sprintf("%d/%d", applied, want), appState(a.AppRow), reported(a)}
}

// reported is the freshness of the cluster's report: a Stale one with its
// age, and "-" when nothing is known of the cluster.
func reported(a read.App) string {
	if a.ClusterState == "" {
		return "-"
	}
	return read.StateText(a.ClusterState, a.HeartbeatAgeSeconds)
}

// appState says whether the cluster applied the generation the hub wants.
func appState(a projector.AppRow) string {
	d, o := a.Desired, a.Observed
	switch {
	case d == nil:
		return "unmanaged"
	case d.Deleted && (o == nil || o.Deleted):
		return "deleted"
	case d.Deleted:
		return "deleting"
	case o != nil && o.Rejected != nil && o.Rejected.Generation >= d.Generation:
		return "rejected: " + o.Rejected.Code
	case o != nil && o.AppliedGeneration >= d.Generation:
		return "applied"
	}
	return "pending"
}

// shortRevision shortens a git commit hash as git does; other revisions
// (tags, Helm chart versions) stay as they are.
func shortRevision(r string) string {
	if len(r) == 40 {
		return r[:7]
	}
	return r
}
