package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// ClusterLabelOptions are the flags and arguments of `argosy cluster
// label`.
type ClusterLabelOptions struct {
	IO    cmdkit.IOStreams
	Write apicmd.WriteFlags
	Name  string
	// Set are the labels to set, Remove those to remove.
	Set    map[string]string
	Remove []string
	// Overwrite is --overwrite: change a label's value.
	Overwrite    bool
	IfGeneration *int64
}

// NewCmdClusterLabel returns `argosy cluster label`. runF replaces the
// behaviour in tests.
func NewCmdClusterLabel(io cmdkit.IOStreams, runF func(context.Context, *ClusterLabelOptions) error) *cobra.Command {
	opts := &ClusterLabelOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "label NAME K=V … K- …",
		Short: "Set or remove labels of a registered cluster, keeping the others",
		Long: `Set (K=V) or remove (K-) labels of the registered cluster NAME and keep its
other labels, as kubectl label does: it reads the registration, changes its
labels and writes it back only if no one changed it in between. A label that
has a value already keeps it unless --overwrite is given. The cluster's keys
stay, and so does its partition pin, if it has one.

Labelling needs an admin token.
` + apicmd.WriteHelp,
		Example: `  argosy cluster label prod-eu tier=1
  argosy cluster label prod-eu env=staging --overwrite
  argosy cluster label prod-eu canary- --dry-run`,
		Args: cmdkit.UsageArgs(cobra.MinimumNArgs(2)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if err := opts.parseChanges(args[1:]); err != nil {
				return err
			}
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterLabelRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().BoolVar(&opts.Overwrite, "overwrite", false, "change the value of a label that has one")
	apicmd.AddGenerationFlag(cmd, &gen, "the registration")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindClusters, nil)
	return cmd
}

// parseChanges parses K=V and K- arguments.
func (o *ClusterLabelOptions) parseChanges(args []string) error {
	o.Set = map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && k != "" {
			o.Set[k] = v
			continue
		}
		if k, ok := strings.CutSuffix(a, "-"); ok && k != "" && !strings.Contains(k, "=") {
			o.Remove = append(o.Remove, k)
			continue
		}
		return &cmdkit.FlagError{Err: fmt.Errorf("%q: want K=V to set a label or K- to remove it", a)}
	}
	for _, k := range o.Remove {
		if _, ok := o.Set[k]; ok {
			return &cmdkit.FlagError{Err: fmt.Errorf("label %q is both set and removed", k)}
		}
	}
	return nil
}

func clusterLabelRun(ctx context.Context, opts *ClusterLabelOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	cur, err := apicmd.Find(ctx, s.Client, api.KindClusters, opts.Name, "", opts.Name)
	if err != nil {
		return s.Explain(err)
	}
	if cur == nil {
		return fmt.Errorf("cluster %q is not registered; argosy cluster list shows those that are", opts.Name)
	}
	labels := maps.Clone(cur.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	var errs []error
	for k, v := range opts.Set {
		if old, ok := labels[k]; ok && old != v && !opts.Overwrite {
			errs = append(errs, fmt.Errorf("label %q already has a value (%s): pass --overwrite to change it", k, old))
		}
		labels[k] = v
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, k := range opts.Remove {
		delete(labels, k)
	}
	expected := opts.IfGeneration
	if expected == nil {
		expected = &cur.Generation
	}
	req := api.ClusterRequest{Labels: labels, ExpectedGeneration: expected}
	res, err := s.Write(ctx, nil, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.RegisterCluster(ctx, opts.Name, req, o)
	})
	if err != nil {
		apicmd.SetHint(err, http.StatusConflict, "the registration changed meanwhile: argosy cluster list shows it; run the command again")
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}
