package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// AppApplyOptions are the flags of `argosy app apply`.
type AppApplyOptions struct {
	IO cmdkit.IOStreams
	apicmd.ApplyOptions
	// Wait is --wait: follow the clusters until each converged or failed,
	// for up to Timeout.
	Wait    bool
	Timeout time.Duration
	// every is how often --wait asks; 0 for a second.
	every time.Duration
}

// NewCmdAppApply returns `argosy app apply`. runF replaces the behaviour in
// tests.
func NewCmdAppApply(io cmdkit.IOStreams, runF func(context.Context, *AppApplyOptions) error) *cobra.Command {
	opts := &AppApplyOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "apply -f FILE (--cluster CLUSTER … | --selector SELECTOR)",
		Short: "Apply Argo CD Applications to clusters, or place them on every cluster a label selector matches",
		Long: `Apply Argo CD Application manifests (argoproj.io/v1alpha1) to each --cluster:
the hub validates each against Argo CD's types and its AppProject's rules on
every cluster, then appends it, one event a cluster. An Application must
name its AppProject (spec.project): the context's project is not filled in,
so that a manifest means the same whoever applies it.
` + apicmd.ApplyHelp + `
--selector makes a placement instead (docs/hub.md#placements): the hub
keeps the Application on every registered cluster whose labels match, now
and as clusters register, gain or lose labels, and removes it where the
selector stops matching by --prune (delete: with its resources; orphan:
its resources stay). argosy app placements shows where it is. A placement
needs a deployer token not limited to some clusters.

--commit-time says when the source commit this deploys was made (CI knows:
git log -1 --format=%cI), and --commit-revision which commit (default: the
manifest's spec.source.targetRevision, if it is a full commit id). Each
cluster's deployment of that revision carries the time, and argosy report
deployments measures lead time from it (docs/projector.md).

--if-generation N, with one object and one cluster, applies it only if the
Application is at generation N there (0: only if it does not exist yet);
with --selector, only if the placement is at generation N. argosy app get
shows the generation. Applying needs a deployer token.

What was written is printed as a table of events, and a line on standard
error says what it means: the clusters it was applied to, or those the
placement's selector matches now. With --dry-run, the clusters it would
change, and for each group of clusters holding the same spec, the diff
from that spec to the manifest's (as the fleet view holds it: right after
a change, the view may be a moment behind, and a note says so).

--wait follows the clusters until each has converged (its agent applied
the generation, and Argo CD reports it Synced and Healthy) or failed (the
agent rejected it, or Argo CD's sync after the apply ended Failed or
Error), saying on standard error where they stand whenever that changes.
It exits 0 when every cluster converged, 1 naming those that failed, and
3 after --timeout naming those still pending: a Stale cluster keeps a wait
pending until it reports again. With --selector it follows the clusters
the selector matches.
` + apicmd.WriteHelp,
		Example: `  argosy app apply -f guestbook.yaml --cluster prod-eu --cluster prod-us
  argosy app apply -f apps/ --cluster staging --dry-run
  kustomize build overlays/prod | argosy app apply -f - --cluster prod-eu,prod-us
  argosy app apply -f guestbook.yaml --cluster prod-eu --if-generation 3
  argosy app apply -f guestbook.yaml --selector 'env=staging,region in (eu,us)' --prune orphan
  argosy app apply -f guestbook.yaml --cluster prod-eu --commit-time "$(git log -1 --format=%cI)" --commit-revision "$(git rev-parse HEAD)"`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Parse(c, gen); err != nil {
				return err
			}
			if opts.Wait && opts.Timeout <= 0 {
				return &cmdkit.FlagError{Err: errors.New("--timeout must be a positive duration")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appApplyRun(c.Context(), opts)
		},
	}
	apicmd.AddApplyFlags(cmd, &opts.ApplyOptions, &gen, true)
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "follow the clusters until each converged (applied, Synced and Healthy) or failed; exit 1 if any failed, 3 past --timeout")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 15*time.Minute, "how long --wait waits")
	return cmd
}

// appApplyRun applies, says what that did or would do, and with --wait
// follows it.
func appApplyRun(ctx context.Context, opts *AppApplyOptions) error {
	since := time.Now()
	done, err := apicmd.ApplyAll(ctx, opts.IO, &opts.ApplyOptions, "Application")
	if err != nil {
		return err
	}
	table, dryRun := opts.Write.Output == "table", opts.Write.DryRun
	if !table && (!opts.Wait || dryRun) {
		return nil
	}
	gs, err := goals(ctx, &opts.ApplyOptions, done)
	if err != nil {
		return fmt.Errorf("written, but: %w", err)
	}
	if table {
		for _, g := range gs {
			summarize(opts.IO.Err, g, dryRun)
		}
	}
	if dryRun {
		if table {
			printDiffs(ctx, opts.IO.Out, opts.IO.Err, done.Client, &opts.Write.API, gs)
		}
		return nil
	}
	if !opts.Wait {
		return nil
	}
	w := &waiter{c: done.Client, api: &opts.Write.API, errw: opts.IO.Err, since: since, timeout: opts.Timeout, every: cmp.Or(opts.every, time.Second)}
	return w.wait(ctx, gs)
}
