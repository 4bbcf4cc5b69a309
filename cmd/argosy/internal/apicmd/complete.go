package apicmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/hub/api"
)

// completeTimeout bounds how long a completion waits for the hub: a shell
// waits for it.
const completeTimeout = 2 * time.Second

// Completion is a cobra completion function.
type Completion = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// Complete completes the names of the hub's objects of kind (not
// deleted), of the cluster *cluster names when cluster is not nil and it
// is set, with the server and token o resolves once the command line is
// parsed. When the hub cannot be reached or refuses, it completes
// nothing, quietly.
func Complete(o *Options, kind string, cluster *string) Completion {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completeTimeout)
		defer cancel()
		c, err := o.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		in := ""
		if cluster != nil {
			in = *cluster
		}
		objs, err := List(ctx, c, in, kind, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, obj := range objs {
			if strings.HasPrefix(obj.Name, toComplete) && !slices.Contains(names, obj.Name) {
				names = append(names, obj.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteFirst is Complete for a command's first argument, and nothing
// after it.
func CompleteFirst(o *Options, kind string, cluster *string) Completion {
	complete := Complete(o, kind, cluster)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return complete(cmd, args, toComplete)
	}
}

// CompleteFlag registers f as the completion of the flag name of cmd.
func CompleteFlag(cmd *cobra.Command, name string, f Completion) {
	if err := cmd.RegisterFlagCompletionFunc(name, f); err != nil {
		// cannot happen for a flag just added; surface it if it does
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("--%s completion: %w", name, err) }
	}
}

// CompleteClusters completes the hub's cluster names, for --cluster.
func CompleteClusters(o *Options) Completion { return Complete(o, api.KindClusters, nil) }
