package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// AppApplyOptions are the flags of `argosy app apply`.
type AppApplyOptions struct {
	IO cmdkit.IOStreams
	apicmd.ApplyOptions
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
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return apicmd.Apply(c.Context(), opts.IO, &opts.ApplyOptions, "Application")
		},
	}
	apicmd.AddApplyFlags(cmd, &opts.ApplyOptions, &gen, true)
	return cmd
}
