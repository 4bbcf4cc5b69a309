package auth

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// LogoutOptions are the arguments of `argosy logout`.
type LogoutOptions struct {
	IO cmdkit.IOStreams
	// Name is the context to log out of; empty for the current one.
	Name string
}

// NewCmdLogout returns `argosy logout`. runF replaces the behaviour in
// tests.
func NewCmdLogout(io cmdkit.IOStreams, runF func(context.Context, *LogoutOptions) error) *cobra.Command {
	opts := &LogoutOptions{IO: io}
	return &cobra.Command{
		Use:   "logout [NAME]",
		Short: "Remove a context's token",
		Long: `Remove the token of the context NAME, or of the current context, from the
argosy config file. The context stays, with its server and project, so
that argosy login SERVER --name NAME gives it a token again; argosy
context delete removes it whole. The token stays valid on the hub: logging
out does not revoke it.`,
		Example: `  argosy logout
  argosy logout prod`,
		Args:              cmdkit.UsageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: apicmd.CompleteContextArg,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return logoutRun(c.Context(), opts)
		},
	}
}

func logoutRun(_ context.Context, opts *LogoutOptions) error {
	path, err := config.Path()
	if err != nil {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		x, err := cfg.Current()
		if err != nil {
			return fmt.Errorf("%s: %w; name the context: argosy logout NAME", path, err)
		}
		if x == nil {
			return fmt.Errorf("no current context in %s: name the context: argosy logout NAME", path)
		}
		name = x.Name
	}
	x := cfg.Find(name)
	if x == nil {
		return fmt.Errorf("no context %q in %s: %s", name, path, cfg.Known())
	}
	if x.Token == "" {
		fmt.Fprintf(opts.IO.Out, "Context %s has no token\n", name)
		return nil
	}
	x.Token = ""
	if err := cfg.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Logged out of %s; context %s has no token now\n", x.Server, name)
	return nil
}
