// Package project is `argosy project`, the commands about Argo CD
// AppProjects across the fleet, through the hub's API: `project apply`,
// `project list` and `project delete`.
package project

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// NewCmdProject returns `argosy project`.
func NewCmdProject(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "project",
		Short: "Apply, list and delete Argo CD AppProjects across the fleet",
		Long: `Apply Argo CD AppProjects to clusters through the hub, list them and delete
them. The hub checks each Application against its AppProject's rules on its
cluster; the project default allows everything until one of that name is
applied. AppProjects need an admin token.`,
	}
	cmd.AddCommand(NewCmdProjectApply(io, nil), NewCmdProjectList(io, nil), NewCmdProjectDelete(io, nil))
	return cmd
}

// ProjectApplyOptions are the flags of `argosy project apply`.
type ProjectApplyOptions struct {
	IO cmdkit.IOStreams
	apicmd.ApplyOptions
}

// NewCmdProjectApply returns `argosy project apply`. runF replaces the
// behaviour in tests.
func NewCmdProjectApply(io cmdkit.IOStreams, runF func(context.Context, *ProjectApplyOptions) error) *cobra.Command {
	opts := &ProjectApplyOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "apply -f FILE --cluster CLUSTER …",
		Short: "Apply Argo CD AppProjects to clusters",
		Long: `Apply Argo CD AppProject manifests (argoproj.io/v1alpha1) to each --cluster:
the hub validates each against Argo CD's types, then appends it, one event a
cluster. Applications of the project are checked against it from then on.
` + apicmd.ApplyHelp + `
--if-generation N, with one object and one cluster, applies it only if the
AppProject is at generation N there (0: only if it does not exist yet);
argosy project list shows the generation.
` + apicmd.WriteHelp,
		Example: `  argosy project apply -f payments.yaml --cluster prod-eu --cluster prod-us
  argosy project apply -f projects/ --cluster staging --dry-run`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Parse(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return apicmd.Apply(c.Context(), opts.IO, &opts.ApplyOptions, "AppProject")
		},
	}
	apicmd.AddApplyFlags(cmd, &opts.ApplyOptions, &gen, false)
	return cmd
}

// NewCmdProjectList returns `argosy project list`. runF replaces the
// behaviour in tests.
func NewCmdProjectList(io cmdkit.IOStreams, runF func(context.Context, *apicmd.ListOptions) error) *cobra.Command {
	return apicmd.NewCmdList(io, apicmd.ListCommand{Kind: api.KindAppProjects, Plural: "AppProjects",
		Short: "List the AppProjects the hub holds, with their generations",
		Long: `List the AppProjects the hub holds (GET /api/v1/objects?kind=appprojects), of
--cluster if given, with the generation of their latest change (what
--if-generation compares).`,
		Example: `  argosy project list
  argosy project list --cluster prod-eu -o yaml`}, runF)
}

// ProjectDeleteOptions are the flags and argument of `argosy project
// delete`.
type ProjectDeleteOptions struct {
	IO           cmdkit.IOStreams
	Write        apicmd.WriteFlags
	Name         string
	Cluster      string
	Namespace    string
	IfGeneration *int64
}

// NewCmdProjectDelete returns `argosy project delete`. runF replaces the
// behaviour in tests.
func NewCmdProjectDelete(io cmdkit.IOStreams, runF func(context.Context, *ProjectDeleteOptions) error) *cobra.Command {
	opts := &ProjectDeleteOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "delete NAME --cluster CLUSTER",
		Short: "Delete an AppProject from a cluster",
		Long: `Delete the AppProject NAME (in --namespace, default argocd) from --cluster.
The hub then refuses Applications of that project on the cluster, unless it
is default, which allows everything once no AppProject of its name is left.
Deleting needs an admin token.
` + apicmd.WriteHelp,
		Example: `  argosy project delete payments --cluster staging
  argosy project delete payments --cluster staging --if-generation 2 --dry-run`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if opts.Cluster == "" {
				return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster to delete it from")}
			}
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return projectDeleteRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "the cluster to delete it from (required)")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "the AppProject's namespace")
	apicmd.AddGenerationFlag(cmd, &gen, "the AppProject")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindAppProjects, &opts.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func projectDeleteRun(ctx context.Context, opts *ProjectDeleteOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	res, err := s.Write(ctx, opts.IfGeneration, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.Delete(ctx, api.KindAppProjects, opts.Cluster, opts.Namespace, opts.Name, false, o)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}
