package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/internal/version"
)

// VersionOptions are the flags of `argosy version`.
type VersionOptions struct {
	IO     IOStreams
	Output string
}

// NewCmdVersion returns `argosy version`. runF replaces the behaviour in tests.
func NewCmdVersion(io IOStreams, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of argosy",
		Example: `  argosy version
  argosy version -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return versionRun(c.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	v := version.Get()
	return printOut(opts.IO.Out, opts.Output, v, []string{"VERSION", "COMMIT", "GO"},
		[][]string{{v.Version, v.Commit, v.GoVersion}})
}
