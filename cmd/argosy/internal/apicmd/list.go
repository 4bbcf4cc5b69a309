package apicmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// ListOptions are the flags of a list of the hub's objects of one kind
// (project list, repo list).
type ListOptions struct {
	IO      cmdkit.IOStreams
	API     Options
	Output  string
	Cluster string
	Deleted bool
}

// ListCommand describes a list command of one kind of object.
type ListCommand struct {
	// Kind is the API's kind (api.KindAppProjects, …); Plural names the
	// objects in help ("AppProjects").
	Kind, Plural string
	Short, Long  string
	Example      string
}

// NewCmdList returns the list command lc describes. runF replaces the
// behaviour in tests.
func NewCmdList(io cmdkit.IOStreams, lc ListCommand, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   lc.Short,
		Long:    lc.Long,
		Example: lc.Example,
		Aliases: []string{"ls"},
		Args:    cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), lc.Kind, opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	AddFlags(cmd, &opts.API)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "only "+lc.Plural+" of this cluster")
	cmd.Flags().BoolVar(&opts.Deleted, "deleted", false, "list deleted "+lc.Plural+" too")
	CompleteFlag(cmd, "cluster", CompleteClusters(&opts.API))
	return cmd
}

func listRun(ctx context.Context, kind string, opts *ListOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	objs, err := List(ctx, c, opts.Cluster, kind, opts.Deleted)
	if err != nil {
		return Explain(&opts.API, err)
	}
	return PrintObjects(opts.IO, opts.Output, kind, objs)
}
