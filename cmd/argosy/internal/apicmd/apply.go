package apicmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// ApplyOptions are the flags of the commands that apply manifests: app
// apply and project apply.
type ApplyOptions struct {
	Write WriteFlags
	// Files is -f: files, directories, or - for standard input.
	Files []string
	// Clusters is --cluster.
	Clusters []string
	// Namespace is --namespace; NamespaceSet says it was given.
	Namespace    string
	NamespaceSet bool
	IfGeneration *int64
	// Selector is --selector, for a placement (app apply only), and
	// Prune its --prune; Placement says --selector was given.
	Selector  string
	Prune     string
	Placement bool
	// CommitTime is --commit-time, and CommitRevision --commit-revision
	// (app apply only): the source commit the change deploys.
	CommitTime     time.Time
	CommitRevision string
	commitTime     string
}

// ApplyHelp says how manifests are read, for app apply and project apply.
const ApplyHelp = `
-f reads YAML or JSON: a file, a directory (its *.yaml, *.yml and *.json
files, in name order) or - for standard input, and may be given more than
once. A YAML file may hold several documents, and a document may be a List.
Each object is sent as one request naming every --cluster, in order; the
first that fails stops the rest, and what was written before it is printed.
Objects that name no namespace go to --namespace (default argocd); one that
names another than a given --namespace is refused.
`

// AddApplyFlags binds the flags of an apply command to o; --if-generation
// is bound to gen, which Parse reads. placements adds --selector and
// --prune.
func AddApplyFlags(cmd *cobra.Command, o *ApplyOptions, gen *int64, placements bool) {
	AddWriteFlags(cmd, &o.Write)
	f := cmd.Flags()
	f.StringArrayVarP(&o.Files, "filename", "f", nil, "the manifest: a YAML or JSON file, a directory, or - for standard input (repeatable)")
	f.StringSliceVar(&o.Clusters, "cluster", nil, "a cluster to apply it to (repeatable, or comma-separated)")
	f.StringVarP(&o.Namespace, "namespace", "n", DefaultNamespace, "the namespace of objects whose manifest names none")
	if placements {
		f.StringVarP(&o.Selector, "selector", "l", "", "place it on every cluster whose labels match this selector, now and as clusters join or change labels (env=prod,region in (eu,us))")
		f.StringVar(&o.Prune, "prune", "delete", "with --selector, what becomes of it where the selector stops matching: delete (with its resources) or orphan (its resources stay)")
		f.StringVar(&o.commitTime, "commit-time", "", "when the source commit this deploys was made (RFC 3339, as CI knows it): the clusters' deployment records and reports measure lead time from it")
		f.StringVar(&o.CommitRevision, "commit-revision", "", "with --commit-time, the commit's full id (default: the manifest's spec.source.targetRevision, if it is one)")
	}
	AddGenerationFlag(cmd, gen, "the object")
	CompleteFlag(cmd, "cluster", CompleteClusters(&o.Write.API))
}

// Parse checks the apply flags.
func (o *ApplyOptions) Parse(cmd *cobra.Command, gen int64) error {
	if err := o.Write.Check(); err != nil {
		return err
	}
	o.Placement = cmd.Flags().Changed("selector")
	switch {
	case len(o.Files) == 0:
		return &cmdkit.FlagError{Err: errors.New("-f is required: the manifest to apply (- for standard input)")}
	case o.Placement && len(o.Clusters) > 0:
		return &cmdkit.FlagError{Err: errors.New("give --cluster or --selector, not both")}
	case o.Placement && o.Prune != "delete" && o.Prune != "orphan":
		return &cmdkit.FlagError{Err: fmt.Errorf("--prune %q: want delete or orphan", o.Prune)}
	case len(o.Clusters) == 0 && !o.Placement:
		return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster to apply it to (argosy cluster list shows them), or --selector to place it by labels")}
	case len(slices.DeleteFunc(slices.Clone(o.Files), func(f string) bool { return f != "-" })) > 1:
		return &cmdkit.FlagError{Err: errors.New("-f -: standard input can be read once")}
	}
	var err error
	if o.IfGeneration, err = ParseGeneration(cmd, gen); err != nil {
		return err
	}
	if o.IfGeneration != nil && len(o.Clusters) > 1 {
		return &cmdkit.FlagError{Err: errors.New("--if-generation applies to one object on one cluster: each cluster's object has a generation of its own")}
	}
	o.NamespaceSet = cmd.Flags().Changed("namespace")
	switch {
	case o.commitTime != "":
		if o.CommitTime, err = time.Parse(time.RFC3339, o.commitTime); err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--commit-time %q: want RFC 3339, as 2026-11-20T10:04:05Z or git log --format=%%cI prints", o.commitTime)}
		}
	case o.CommitRevision != "":
		return &cmdkit.FlagError{Err: errors.New("--commit-revision needs --commit-time: when that commit was made")}
	}
	return nil
}

// commitID is a full git commit id, SHA-1 or SHA-256.
var commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// commit is the source commit m deploys, per --commit-time and
// --commit-revision; nil without --commit-time.
func (o *ApplyOptions) commit(m Manifest) (*api.SourceCommit, error) {
	if o.CommitTime.IsZero() {
		return nil, nil
	}
	rev := o.CommitRevision
	if rev == "" {
		var spec struct {
			Spec struct {
				Source struct {
					TargetRevision string `json:"targetRevision"`
				} `json:"source"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(m.JSON, &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Source, err)
		}
		if rev = spec.Spec.Source.TargetRevision; !commitID.MatchString(rev) {
			return nil, &cmdkit.FlagError{Err: fmt.Errorf("%s: --commit-time needs --commit-revision: spec.source.targetRevision %q is not a commit id", m.Source, rev)}
		}
	}
	if !commitID.MatchString(rev) {
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("--commit-revision %q: want the commit's full id, 40 (or 64) lowercase hexadecimal digits", rev)}
	}
	return &api.SourceCommit{Revision: rev, CommittedAt: o.CommitTime}, nil
}

// Apply applies the manifests of o.Files, which must all be of kind
// (Application or AppProject), to o.Clusters, one request an object, and
// prints what was written: all of it, or, when a request fails, what was
// written before it.
func Apply(ctx context.Context, io cmdkit.IOStreams, o *ApplyOptions, kind string) error {
	_, err := ApplyAll(ctx, io, o, kind)
	return err
}

// Applied is what ApplyAll wrote: each manifest with its hub's answer.
type Applied struct {
	Manifests []Manifest
	Results   []*api.Result
	// Client is the session's client, for what the command does next.
	Client *api.Client
}

// ApplyAll is Apply, returning what was written when all of it was.
func ApplyAll(ctx context.Context, io cmdkit.IOStreams, o *ApplyOptions, kind string) (*Applied, error) {
	ms, err := ReadManifests(io.In, o.Files)
	if err != nil {
		return nil, err
	}
	if err := ForKind(ms, kind, o.Namespace, o.NamespaceSet); err != nil {
		return nil, err
	}
	if o.IfGeneration != nil && len(ms) > 1 {
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("--if-generation applies to one object, and %d were read", len(ms))}
	}
	path := map[string]string{"Application": api.KindApplications, "AppProject": api.KindAppProjects}[kind]
	s, err := o.Write.Session()
	if err != nil {
		return nil, err
	}
	commits := make([]*api.SourceCommit, len(ms))
	for i, m := range ms {
		if commits[i], err = o.commit(m); err != nil {
			return nil, err
		}
	}
	done := &Applied{Manifests: ms, Client: s.Client}
	for i, m := range ms {
		req := api.ApplyRequest{Clusters: o.Clusters, Manifest: m.JSON, ExpectedGeneration: o.IfGeneration, Commit: commits[i]}
		res, err := s.Write(ctx, nil, func(ctx context.Context, wo api.WriteOptions) (*api.Result, error) {
			if o.Placement {
				return s.Client.ApplyPlacement(ctx, api.PlacementRequest{Selector: o.Selector, Prune: o.Prune, Manifest: m.JSON,
					ExpectedGeneration: o.IfGeneration, Commit: commits[i]}, wo)
			}
			return s.Client.Apply(ctx, path, req, wo)
		})
		if err != nil {
			err = fmt.Errorf("%s: %s %q: %w", m.Source, kind, m.Name, err)
			if i == 0 {
				return nil, err
			}
			if perr := PrintResult(io, o.Write.Output, Merge(done.Results)); perr != nil {
				return nil, errors.Join(err, perr)
			}
			return nil, fmt.Errorf("%w\n  %d of the %d objects were applied before it (printed above); the rest were not sent", err, i, len(ms))
		}
		done.Results = append(done.Results, res)
	}
	return done, PrintResult(io, o.Write.Output, Merge(done.Results))
}
