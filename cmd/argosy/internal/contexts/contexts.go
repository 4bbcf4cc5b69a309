// Package contexts is `argosy context` (alias ctx): the contexts of the
// argosy config file, which `argosy login` writes. `context list` shows
// them without their tokens, `context use` makes one current,
// `context current` names the current one and `context delete` removes one.
package contexts

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// NewCmdContext returns `argosy context` and its verbs.
func NewCmdContext(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "context",
		Aliases: []string{"ctx"},
		Short:   "List, switch and delete the contexts of the argosy config file",
		Long: `A context is a hub's base URL, the bearer token to call it with and a
default project, under a name. argosy login adds or updates one and makes
it current; the commands that call a server use the current context
unless --context names another, or --server or ARGOSY_SERVER names
another server.

The config file is $ARGOSY_CONFIG, else argosy/config.yaml in the user's
configuration directory ($XDG_CONFIG_HOME or ~/.config on Linux). It holds
tokens, so it is written readable by its owner only.`,
		Example: `  argosy context list
  argosy context use prod
  argosy ctx current`,
	}
	cmd.AddCommand(NewCmdContextList(io, nil), NewCmdContextUse(io, nil), NewCmdContextCurrent(io, nil),
		NewCmdContextDelete(io, nil))
	return cmd
}

// ContextListOptions are the flags of `argosy context list`.
type ContextListOptions struct {
	IO     cmdkit.IOStreams
	Output string
}

// NewCmdContextList returns `argosy context list`. runF replaces the
// behaviour in tests.
func NewCmdContextList(io cmdkit.IOStreams, runF func(context.Context, *ContextListOptions) error) *cobra.Command {
	opts := &ContextListOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the contexts; * marks the current one",
		Long: `List the contexts of the argosy config file: name, server, default
project, and whether a token is set. Tokens are never printed.`,
		Example: `  argosy context list
  argosy context list -o json`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return contextListRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Item is a context as `context list` shows it: without its token.
type Item struct {
	Name     string `json:"name"`
	Current  bool   `json:"current"`
	Server   string `json:"server"`
	Project  string `json:"project,omitempty"`
	HasToken bool   `json:"hasToken"`
}

func contextListRun(_ context.Context, opts *ContextListOptions) error {
	cfg, _, err := load()
	if err != nil {
		return err
	}
	items := make([]Item, 0, len(cfg.Contexts))
	rows := make([][]string, 0, len(cfg.Contexts))
	for _, x := range cfg.Contexts {
		it := Item{Name: x.Name, Current: x.Name == cfg.CurrentContext, Server: x.Server, Project: x.Project, HasToken: x.Token != ""}
		items = append(items, it)
		current, token := "", "none"
		if it.Current {
			current = "*"
		}
		if it.HasToken {
			token = "set"
		}
		rows = append(rows, []string{current, x.Name, cmdkit.OrDash(x.Server), cmdkit.OrDash(x.Project), token})
	}
	if len(items) == 0 && opts.Output == "table" {
		fmt.Fprintln(opts.IO.Err, "No contexts; add one with: argosy login SERVER --token TOKEN")
		return nil
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, items, []string{"CURRENT", "NAME", "SERVER", "PROJECT", "TOKEN"}, rows)
}

// ContextUseOptions are the arguments of `argosy context use`.
type ContextUseOptions struct {
	IO   cmdkit.IOStreams
	Name string
}

// NewCmdContextUse returns `argosy context use`. runF replaces the
// behaviour in tests.
func NewCmdContextUse(io cmdkit.IOStreams, runF func(context.Context, *ContextUseOptions) error) *cobra.Command {
	opts := &ContextUseOptions{IO: io}
	cmd := &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a context the current one",
		Long:              `Make the context NAME the current one: the commands that call a server use it from now on.`,
		Example:           `  argosy context use prod`,
		Args:              cmdkit.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: apicmd.CompleteContextArg,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return contextUseRun(c.Context(), opts)
		},
	}
	return cmd
}

func contextUseRun(_ context.Context, opts *ContextUseOptions) error {
	cfg, path, err := load()
	if err != nil {
		return err
	}
	x := cfg.Find(opts.Name)
	if x == nil {
		return fmt.Errorf("no context %q in %s: %s", opts.Name, path, cfg.Known())
	}
	cfg.CurrentContext = x.Name
	if err := cfg.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Switched to context %s (%s)\n", x.Name, x.Server)
	return nil
}

// ContextCurrentOptions are the flags of `argosy context current`.
type ContextCurrentOptions struct {
	IO cmdkit.IOStreams
}

// NewCmdContextCurrent returns `argosy context current`. runF replaces the
// behaviour in tests.
func NewCmdContextCurrent(io cmdkit.IOStreams, runF func(context.Context, *ContextCurrentOptions) error) *cobra.Command {
	opts := &ContextCurrentOptions{IO: io}
	return &cobra.Command{
		Use:   "current",
		Short: "Print the current context's name",
		Long: `Print the current context's name. It fails when there is none, so that
a script can tell.`,
		Example: `  argosy context current`,
		Args:    cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return contextCurrentRun(c.Context(), opts)
		},
	}
}

// ErrNoCurrent is returned when there is no current context.
var ErrNoCurrent = errors.New("no current context")

func contextCurrentRun(_ context.Context, opts *ContextCurrentOptions) error {
	cfg, path, err := load()
	if err != nil {
		return err
	}
	x, err := cfg.Current()
	if err != nil {
		return fmt.Errorf("%s: %w; run: argosy context use NAME", path, err)
	}
	if x == nil {
		return fmt.Errorf("%w in %s; run: argosy login SERVER, or argosy context use NAME", ErrNoCurrent, path)
	}
	fmt.Fprintln(opts.IO.Out, x.Name)
	return nil
}

// ContextDeleteOptions are the arguments of `argosy context delete`.
type ContextDeleteOptions struct {
	IO   cmdkit.IOStreams
	Name string
}

// NewCmdContextDelete returns `argosy context delete`. runF replaces the
// behaviour in tests.
func NewCmdContextDelete(io cmdkit.IOStreams, runF func(context.Context, *ContextDeleteOptions) error) *cobra.Command {
	opts := &ContextDeleteOptions{IO: io}
	return &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"rm"},
		Short:   "Delete a context and its token",
		Long: `Delete the context NAME, with its token, from the argosy config file. If
it was the current context, there is none afterwards. The token stays
valid on the hub: deleting the context does not revoke it.`,
		Example:           `  argosy context delete staging`,
		Args:              cmdkit.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: apicmd.CompleteContextArg,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return contextDeleteRun(c.Context(), opts)
		},
	}
}

func contextDeleteRun(_ context.Context, opts *ContextDeleteOptions) error {
	cfg, path, err := load()
	if err != nil {
		return err
	}
	wasCurrent := cfg.CurrentContext == opts.Name
	if !cfg.Delete(opts.Name) {
		return fmt.Errorf("no context %q in %s: %s", opts.Name, path, cfg.Known())
	}
	if err := cfg.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Deleted context %s\n", opts.Name)
	if wasCurrent {
		fmt.Fprintln(opts.IO.Err, "It was the current context; there is none now. Pick one with: argosy context use NAME")
	}
	return nil
}

// load reads the config file and returns it with its path.
func load() (*config.Config, string, error) {
	path, err := config.Path()
	if err != nil {
		return nil, "", err
	}
	cfg, err := config.Load(path)
	return cfg, path, err
}
