package cmdkit

import (
	"context"
	"slices"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/internal/version"
)

// VersionOptions are the flags of the version command.
type VersionOptions struct {
	IO     IOStreams
	Output string
}

// NewCmdVersion returns the version command of the binary named binary,
// which prints in format unless -o says otherwise. runF replaces the
// behaviour in tests.
func NewCmdVersion(io IOStreams, binary, format string, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: io}
	formats := append([]string{format}, slices.DeleteFunc(slices.Clone(outputFormats), func(f string) bool { return f == format })...)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of " + binary,
		Example: `  ` + binary + ` version
  ` + binary + ` version -o ` + formats[1],
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := CheckOutput(opts.Output, formats...); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return versionRun(c.Context(), opts)
		},
	}
	AddOutputFlag(cmd, &opts.Output, formats...)
	return cmd
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	v := version.Get()
	return PrintOut(opts.IO.Out, opts.Output, v, []string{"VERSION", "COMMIT", "GO"},
		[][]string{{v.Version, v.Commit, v.GoVersion}})
}
