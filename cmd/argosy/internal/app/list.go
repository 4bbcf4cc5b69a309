package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// AppListOptions are the flags of `argosy app list`.
type AppListOptions struct {
	IO        cmdkit.IOStreams
	API       apicmd.Options
	Output    string
	Cluster   string
	Namespace string
	// Project is --project; ProjectSet says it was given.
	Project    string
	ProjectSet bool
	// AllProjects is -A/--all-projects.
	AllProjects bool
	Deleted     bool
}

// NewCmdAppList returns `argosy app list`. runF replaces the behaviour in
// tests.
func NewCmdAppList(io cmdkit.IOStreams, runF func(context.Context, *AppListOptions) error) *cobra.Command {
	opts := &AppListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the Applications the hub holds, with their projects and generations",
		Long: `List the Applications the hub holds (GET /api/v1/objects?kind=applications),
of --cluster and --namespace if given: their AppProject and the generation
of their latest change (what --if-generation compares).

Like kubectl's namespace, the context's project (argosy login --project)
applies: with one set, only its Applications are listed, and a note on
standard error says so. --project names another; -A lists every project.
argosy app status shows how the clusters report them.`,
		Example: `  argosy app list
  argosy app list --cluster prod-eu
  argosy app list --project payments -o json
  argosy app list -A --deleted`,
		Aliases: []string{"ls"},
		Args:    cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			opts.ProjectSet = c.Flags().Changed("project")
			if opts.ProjectSet && opts.AllProjects {
				return &cmdkit.FlagError{Err: errors.New("give --project or --all-projects, not both")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appListRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	f := cmd.Flags()
	f.StringVar(&opts.Cluster, "cluster", "", "only Applications of this cluster")
	f.StringVarP(&opts.Namespace, "namespace", "n", "", "only Applications in this namespace (default: any)")
	f.StringVar(&opts.Project, "project", "", "only Applications of this AppProject (default: the context's project, if it has one)")
	f.BoolVarP(&opts.AllProjects, "all-projects", "A", false, "Applications of every AppProject, whatever the context's project")
	f.BoolVar(&opts.Deleted, "deleted", false, "list deleted Applications too")
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.API))
	apicmd.CompleteFlag(cmd, "project", apicmd.Complete(&opts.API, api.KindAppProjects, &opts.Cluster))
	return cmd
}

func appListRun(ctx context.Context, opts *AppListOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	objs, err := apicmd.List(ctx, c, opts.Cluster, api.KindApplications, opts.Deleted)
	if err != nil {
		return apicmd.Explain(&opts.API, err)
	}
	project := opts.Project
	if t := opts.API.Target(); !opts.ProjectSet && !opts.AllProjects && t != nil && t.Context != nil && t.Context.Project != "" {
		project = t.Context.Project
		fmt.Fprintf(opts.IO.Err, "Project %s, context %q's; -A lists every project.\n", project, t.Context.Name)
	}
	out := objs[:0]
	for _, o := range objs {
		if (project == "" || o.Project == project) && (opts.Namespace == "" || o.Namespace == opts.Namespace) {
			out = append(out, o)
		}
	}
	return apicmd.PrintObjects(opts.IO, opts.Output, api.KindApplications, out)
}
