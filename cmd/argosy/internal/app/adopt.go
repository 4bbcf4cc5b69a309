package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
)

// AppAdoptOptions are the flags and argument of `argosy app adopt`.
type AppAdoptOptions struct {
	IO        cmdkit.IOStreams
	Write     apicmd.WriteFlags
	Name      string
	Cluster   string
	Namespace string
	// File, if set, is the manifest to adopt with instead of what the
	// cluster published.
	File string
}

// NewCmdAppAdopt returns `argosy app adopt`. runF replaces the behaviour in
// tests.
func NewCmdAppAdopt(io cmdkit.IOStreams, runF func(context.Context, *AppAdoptOptions) error) *cobra.Command {
	opts := &AppAdoptOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "adopt NAME --cluster CLUSTER",
		Short: "Make an Application that a cluster owns the hub's, without re-creating it",
		Long: `Turn the Application NAME that exists on --cluster without being the hub's
(one a spoke in autonomous mode created and publishes) into one the hub
manages. The hub appends it at generation 1, marked as an adoption; the
cluster's agent applies it to the Application in place (same object, same
uid: nothing is deleted or re-created, nothing re-syncs for it) and manages
it from then on, and it stops publishing it as its own. argosy app apply
changes it after that.

The spec adopted is the one the cluster last published, from the read API
the hub serves (argosy app status NAME -o yaml shows it as status.local);
-f adopts with a manifest of your own instead, applied in place just the
same. The hub validates either as it does every Application. Adopting an
Application the hub manages already is refused (409). Adopting needs a
deployer token.
` + apicmd.WriteHelp,
		Example: `  argosy app adopt guestbook --cluster edge-7
  argosy app adopt guestbook --cluster edge-7 --dry-run -o yaml
  argosy app adopt guestbook --cluster edge-7 -f guestbook.yaml`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if opts.Cluster == "" {
				return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster whose Application the hub takes over")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appAdoptRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "the cluster that has the Application (required)")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "the Application's namespace")
	cmd.Flags().StringVarP(&opts.File, "filename", "f", "", "adopt with this manifest (YAML or JSON, - for stdin) instead of what the cluster published")
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func appAdoptRun(ctx context.Context, opts *AppAdoptOptions) error {
	manifest, err := adoptManifest(ctx, opts)
	if err != nil {
		return err
	}
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	req := api.ApplyRequest{Clusters: []string{opts.Cluster}, Manifest: manifest, Adopt: true}
	res, err := s.Write(ctx, nil, func(ctx context.Context, wo api.WriteOptions) (*api.Result, error) {
		return s.Client.Apply(ctx, api.KindApplications, req, wo)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}

// adoptManifest is -f's manifest, or the Application as the cluster last
// published it.
func adoptManifest(ctx context.Context, opts *AppAdoptOptions) (json.RawMessage, error) {
	if opts.File != "" {
		ms, err := apicmd.ReadManifests(opts.IO.In, []string{opts.File})
		if err != nil {
			return nil, err
		}
		if err := apicmd.ForKind(ms, "Application", opts.Namespace, true); err != nil {
			return nil, err
		}
		if len(ms) != 1 || ms[0].Name != opts.Name || ms[0].Namespace != opts.Namespace {
			return nil, &cmdkit.FlagError{Err: fmt.Errorf("-f %s: want one Application named %s/%s", opts.File, opts.Namespace, opts.Name)}
		}
		return ms[0].JSON, nil
	}
	rc, err := opts.Write.API.Client()
	if err != nil {
		return nil, err
	}
	rows, err := rc.Apps(ctx, projector.AppFilter{Cluster: opts.Cluster, Namespace: opts.Namespace, Name: opts.Name})
	if err != nil {
		return nil, fmt.Errorf("reading what %s published of %s/%s: %w (or adopt with a manifest of your own: -f FILE)",
			opts.Cluster, opts.Namespace, opts.Name, opts.Write.API.Explain(err))
	}
	var local *projector.LocalApp
	for _, r := range rows {
		if r.Observed != nil && r.Observed.Local != nil {
			local = r.Observed.Local
		}
	}
	if local == nil {
		return nil, fmt.Errorf("cluster %s has published no Application %s/%s of its own: only a spoke in autonomous mode publishes them "+
			"(argosy app status --cluster %s lists what it reports); adopt with a manifest of your own with -f FILE",
			opts.Cluster, opts.Namespace, opts.Name, opts.Cluster)
	}
	if why := apicmd.Omitted(local.Spec); why != "" {
		return nil, fmt.Errorf("the spec cluster %s published of %s/%s is %s; adopt with a manifest of your own with -f FILE",
			opts.Cluster, opts.Namespace, opts.Name, why)
	}
	meta := map[string]any{"name": opts.Name, "namespace": opts.Namespace}
	if len(local.Labels) > 0 {
		meta["labels"] = local.Labels
	}
	return json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": local.Spec})
}
