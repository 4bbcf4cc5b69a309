package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// AppLiveOptions are the flags and argument of `argosy app tree`, `diff`,
// `manifests` and `logs`: a live question to the Application's cluster.
type AppLiveOptions struct {
	IO        cmdkit.IOStreams
	API       apicmd.Options
	Output    string
	Name      string
	Cluster   string
	Namespace string
	Timeout   time.Duration
	Target    api.LiveTarget
	Logs      api.LogOptions
}

const liveHelp = `

The hub asks the cluster's agent over the log, and the agent answers from
its cluster's API: only about the Application's own resources (its
managed resources and what they own), with a Secret's values masked. A
cluster whose agent does not run answers nothing: the command fails after
--timeout (at most 30s) and says what the fleet view knows of the
cluster. Asking is audited; logs need a deployer token, the rest a
viewer's.`

// NewCmdAppTree returns `argosy app tree`.
func NewCmdAppTree(io cmdkit.IOStreams, runF func(context.Context, *AppLiveOptions) error) *cobra.Command {
	opts := &AppLiveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "tree NAME --cluster CLUSTER",
		Short: "Show an Application's live resource tree, as its cluster answers",
		Long: `Show the resources of the Application NAME on --cluster, live: those Argo CD
manages and what they own (ReplicaSets, Pods), with their health.` + liveHelp,
		Example: `  argosy app tree guestbook --cluster prod-eu
  argosy app tree guestbook --cluster prod-eu -o json`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.check(args, "table", "json", "yaml"); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appTreeRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	opts.flags(cmd)
	return cmd
}

// NewCmdAppDiff returns `argosy app diff`.
func NewCmdAppDiff(io cmdkit.IOStreams, runF func(context.Context, *AppLiveOptions) error) *cobra.Command {
	opts := &AppLiveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "diff NAME --cluster CLUSTER",
		Short: "Show how an Application's live resources differ from what Argo CD last applied",
		Long: `Show, for each resource the Application NAME manages on --cluster, how the
live object differs from what its Argo CD last applied (the object's
last-applied-configuration): what was changed on the cluster since the
last sync. Only the fields Argo CD set are compared, so defaults and
status are not changes; a Secret's values are masked, a changed one with
a longer mask. A resource Git changed since the last sync is OutOfSync,
which argosy app status shows: the cluster holds nothing newer than what
was applied. Exits 1 when a resource differs, as diff does.` + liveHelp,
		Example: `  argosy app diff guestbook --cluster prod-eu
  argosy app diff guestbook --cluster prod-eu -o json`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.check(args, "text", "json", "yaml"); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appDiffRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output, "text", "json", "yaml")
	opts.flags(cmd)
	return cmd
}

// NewCmdAppManifests returns `argosy app manifests`.
func NewCmdAppManifests(io cmdkit.IOStreams, runF func(context.Context, *AppLiveOptions) error) *cobra.Command {
	opts := &AppLiveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "manifests NAME --cluster CLUSTER --kind KIND --resource-name NAME",
		Short: "Show the live manifest of one of an Application's resources",
		Long: `Show the live object of one resource of the Application NAME on --cluster, as
argosy app tree names it, without its managed fields.` + liveHelp,
		Example: `  argosy app manifests guestbook --cluster prod-eu --group apps --kind Deployment --resource-name guestbook --resource-namespace web
  argosy app manifests guestbook --cluster prod-eu --kind ConfigMap --resource-name settings --resource-namespace web -o json`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.check(args, "yaml", "json"); err != nil {
				return err
			}
			if opts.Target.Kind == "" || opts.Target.Name == "" {
				return &cmdkit.FlagError{Err: errors.New("--kind and --resource-name are required: the resource, as argosy app tree names it")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appManifestsRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output, "yaml", "json")
	opts.flags(cmd)
	cmd.Flags().StringVar(&opts.Target.Group, "group", "", "the resource's API group (empty for the core group)")
	cmd.Flags().StringVar(&opts.Target.Version, "version", "v1", "the resource's API version")
	cmd.Flags().StringVar(&opts.Target.Kind, "kind", "", "the resource's kind (required)")
	cmd.Flags().StringVar(&opts.Target.Name, "resource-name", "", "the resource's name (required)")
	cmd.Flags().StringVar(&opts.Target.Namespace, "resource-namespace", "", "the resource's namespace (empty for a cluster-scoped one)")
	return cmd
}

// NewCmdAppLogs returns `argosy app logs`.
func NewCmdAppLogs(io cmdkit.IOStreams, runF func(context.Context, *AppLiveOptions) error) *cobra.Command {
	opts := &AppLiveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "logs NAME --cluster CLUSTER --pod POD",
		Short: "Show recent log lines of one of an Application's Pods",
		Long: `Show the newest log lines of a Pod of the Application NAME on --cluster, as
argosy app tree names it: --tail lines at most (the agent keeps at most
256 KiB, the newest, and says when it cut older ones).` + liveHelp,
		Example: `  argosy app logs guestbook --cluster prod-eu --pod guestbook-7d9f-x2v9q --pod-namespace web
  argosy app logs guestbook --cluster prod-eu --pod guestbook-7d9f-x2v9q --pod-namespace web --container web --tail 50 --since 10m --timestamps`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.check(args, "text", "json"); err != nil {
				return err
			}
			if opts.Target.Name == "" {
				return &cmdkit.FlagError{Err: errors.New("--pod is required: the Pod, as argosy app tree names it")}
			}
			since, err := c.Flags().GetDuration("since")
			if err != nil {
				return &cmdkit.FlagError{Err: fmt.Errorf("--since: %w", err)}
			}
			if since < 0 {
				return &cmdkit.FlagError{Err: fmt.Errorf("--since %s: want a duration ≥ 0 such as 10m", since)}
			}
			opts.Logs.SinceSeconds = int64(since / time.Second)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appLogsRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output, "text", "json")
	opts.flags(cmd)
	cmd.Flags().StringVar(&opts.Target.Name, "pod", "", "the Pod (required)")
	cmd.Flags().StringVar(&opts.Target.Namespace, "pod-namespace", "", "the Pod's namespace")
	cmd.Flags().StringVarP(&opts.Logs.Container, "container", "c", "", "the container (default: the Pod's only one)")
	cmd.Flags().Int64Var(&opts.Logs.TailLines, "tail", 0, "at most this many of the newest lines (default: the agent's 1000)")
	cmd.Flags().Duration("since", 0, "only lines this far back, such as 10m")
	cmd.Flags().BoolVar(&opts.Logs.Timestamps, "timestamps", false, "begin each line with the time its container wrote it (RFC 3339)")
	return cmd
}

func (o *AppLiveOptions) flags(cmd *cobra.Command) {
	apicmd.AddFlags(cmd, &o.API)
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "the cluster to ask (required)")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", apicmd.DefaultNamespace, "the Application's namespace")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Second, "how long to wait for the cluster's answer (at most 30s)")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&o.API, api.KindApplications, &o.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&o.API))
}

func (o *AppLiveOptions) check(args []string, formats ...string) error {
	if err := cmdkit.CheckOutput(o.Output, formats...); err != nil {
		return err
	}
	o.Name = args[0]
	if o.Cluster == "" {
		return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster to ask")}
	}
	if o.Timeout <= 0 || o.Timeout > 30*time.Second {
		return &cmdkit.FlagError{Err: fmt.Errorf("--timeout %s: want a duration above 0, at most 30s", o.Timeout)}
	}
	return nil
}

func appTreeRun(ctx context.Context, o *AppLiveOptions) error {
	c, err := o.API.Client()
	if err != nil {
		return err
	}
	a, err := c.Tree(ctx, o.Cluster, o.Namespace, o.Name, o.Timeout)
	if err != nil {
		return o.API.Explain(err)
	}
	var tree schemas.ApplicationTree
	if err := json.Unmarshal(a.Answer, &tree); err != nil {
		return fmt.Errorf("the cluster's tree does not decode: %w", err)
	}
	rows := make([][]string, 0, len(tree.Nodes))
	for _, n := range tree.Nodes {
		kind, parent, health := n.Kind, "", ""
		if n.Group != "" {
			kind = n.Kind + "." + n.Group
		}
		for _, p := range n.ParentRefs {
			parent = p.Kind + "/" + p.Name
		}
		if n.Health != nil {
			health = n.Health.Status
		}
		rows = append(rows, []string{kind, n.Namespace, n.Name, health, parent})
	}
	return cmdkit.PrintOut(o.IO.Out, o.Output, json.RawMessage(a.Answer), []string{"KIND", "NAMESPACE", "NAME", "HEALTH", "PARENT"}, rows)
}

func appDiffRun(ctx context.Context, o *AppLiveOptions) error {
	c, err := o.API.Client()
	if err != nil {
		return err
	}
	a, err := c.Diff(ctx, o.Cluster, o.Namespace, o.Name, o.Timeout)
	if err != nil {
		return o.API.Explain(err)
	}
	var d schemas.ApplicationDiff
	if err := json.Unmarshal(a.Answer, &d); err != nil {
		return fmt.Errorf("the cluster's diff does not decode: %w", err)
	}
	if o.Output != "text" {
		if err := printObject(o.IO.Out, o.Output, a.Answer); err != nil {
			return err
		}
	} else if err := writeLiveDiff(o.IO.Out, o.IO.Err, d); err != nil {
		return err
	}
	modified := 0
	for _, it := range d.Items {
		if it.Modified {
			modified++
		}
	}
	if modified == 0 {
		return nil
	}
	return &cmdkit.ExitError{Code: 1, Err: fmt.Errorf("%d of %d resources of %s on %s differ from what Argo CD last applied",
		modified, len(d.Items), o.Name, o.Cluster)}
}

// writeLiveDiff writes each modified resource of d as diff -u of its
// target state and its live state, both as YAML, under a header that
// names it, and notes on errw the resources with no target state.
func writeLiveDiff(w, errw io.Writer, d schemas.ApplicationDiff) error {
	noTarget := 0
	for _, it := range d.Items {
		if it.TargetState == "" && it.NormalizedLiveState != "null" {
			noTarget++
		}
		if !it.Modified {
			continue
		}
		target, err := yamlOf(it.TargetState)
		if err != nil {
			return err
		}
		live, err := yamlOf(it.NormalizedLiveState)
		if err != nil {
			return err
		}
		ref := schemas.TreeRef{Group: it.Group, Kind: it.Kind, Namespace: it.Namespace, Name: it.Name}
		if _, err := fmt.Fprintf(w, "===== %s ======\n--- last applied\n+++ live\n%s", ref, unified(target, live)); err != nil {
			return err
		}
	}
	if noTarget > 0 {
		fmt.Fprintf(errw, "%d resources carry no last-applied configuration (applied server-side): their changes cannot be shown\n", noTarget)
	}
	return nil
}

// yamlOf is a state of a diff answer as YAML: empty for none or null.
func yamlOf(state string) (string, error) {
	if state == "" || state == "null" {
		return "", nil
	}
	y, err := yaml.JSONToYAML([]byte(state))
	if err != nil {
		return "", fmt.Errorf("the cluster's diff holds a state that does not decode: %w", err)
	}
	return string(y), nil
}

func appManifestsRun(ctx context.Context, o *AppLiveOptions) error {
	c, err := o.API.Client()
	if err != nil {
		return err
	}
	a, err := c.Manifest(ctx, o.Cluster, o.Namespace, o.Name, o.Target, o.Timeout)
	if err != nil {
		return o.API.Explain(err)
	}
	return printObject(o.IO.Out, o.Output, a.Answer)
}

func appLogsRun(ctx context.Context, o *AppLiveOptions) error {
	c, err := o.API.Client()
	if err != nil {
		return err
	}
	a, err := c.Logs(ctx, o.Cluster, o.Namespace, o.Name, o.Target.Namespace, o.Target.Name, o.Logs, o.Timeout)
	if err != nil {
		return o.API.Explain(err)
	}
	if o.Output == "json" {
		return printObject(o.IO.Out, "json", a.Answer)
	}
	var logs struct {
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal(a.Answer, &logs); err != nil {
		return fmt.Errorf("the cluster's logs do not decode: %w", err)
	}
	if a.Truncated {
		fmt.Fprintln(o.IO.Err, "older lines were cut: the agent sends at most 256 KiB, the newest")
	}
	_, err = io.WriteString(o.IO.Out, strings.Join(logs.Lines, "\n")+"\n")
	return err
}

// printObject prints raw JSON as indented JSON or as YAML.
func printObject(w io.Writer, format string, raw json.RawMessage) error {
	if format == "json" {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}
