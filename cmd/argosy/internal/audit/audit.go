// Package audit is `argosy audit`, the audit history from the read API,
// and `audit verify`, which has the server check its hash chains.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// AuditOptions are the flags of `argosy audit`.
type AuditOptions struct {
	IO        cmdkit.IOStreams
	API       apicmd.Options
	Output    string
	Cluster   string
	Namespace string
	App       string
	Actor     string
	// Since, From and To bound the entries' times; Since counts back from
	// Now and excludes From.
	Since    time.Duration
	From, To time.Time
	Limit    int
	// Group is how entries are folded: GroupAction (one row per action,
	// from the timeline) or GroupNone (one row per entry).
	Group string
	// Reads keeps the calls that were allowed and changed nothing.
	Reads bool
	Now   func() time.Time
}

// The values of --group.
const (
	GroupAction = "action"
	GroupNone   = "none"
)

// NewCmdAudit returns `argosy audit` and its verify subcommand.
func NewCmdAudit(io cmdkit.IOStreams, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{IO: io, Now: time.Now}
	var from, to string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the audit timeline: who changed what, when, and what each cluster made of it",
		Long: `List the audit timeline, newest first: one row per action, a person's call
with every change it wrote folded in. A placement change is one action, its
author's, however many clusters the hub placed it on (CLUSTERS), with its
results counted once (RESULT); the hub's own writes for it name the author,
via hub/placement. Reads (calls allowed that changed nothing) are left out
unless --reads; refusals are always shown.

--group none lists every entry instead, as recorded: each cluster's change
and each call to the hub's API. Every entry is chained by hash to the one
before it; 'argosy audit verify' checks the chains.`,
		Example: `  argosy audit
  argosy audit --app guestbook --group none
  argosy audit --cluster prod-eu --app guestbook
  argosy audit --actor alice --since 24h --reads
  argosy audit --from 2026-03-01T00:00:00Z --to 2026-03-02T00:00:00Z --limit 500 -o json`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.parse(from, to); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return auditRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	f := cmd.Flags()
	f.StringVar(&opts.Cluster, "cluster", "", "only entries about this cluster")
	f.StringVarP(&opts.Namespace, "namespace", "n", "", "only entries about objects in this namespace")
	f.StringVar(&opts.App, "app", "", "only entries about the Application (or other object) of this name")
	f.StringVar(&opts.Actor, "actor", "", "only entries by this actor")
	f.DurationVar(&opts.Since, "since", 0, "only entries of this long ago or later, such as 1h or 168h")
	f.StringVar(&from, "from", "", "only entries at or after this RFC 3339 time")
	f.StringVar(&to, "to", "", "only entries before this RFC 3339 time")
	f.IntVar(&opts.Limit, "limit", 0, fmt.Sprintf("at most this many actions, up to %d (default: the server's, %d); with --group none, entries, up to %d (default %d)",
		read.MaxTimelineLimit, read.DefaultTimelineLimit, read.MaxAuditLimit, read.DefaultAuditLimit))
	f.StringVar(&opts.Group, "group", GroupAction, "fold entries into one row per action (action), or list every entry (none)")
	f.BoolVar(&opts.Reads, "reads", false, "also list the calls that were allowed and changed nothing (reads, logins, dry runs)")
	cmd.AddCommand(NewCmdAuditVerify(io, nil))
	return cmd
}

func (o *AuditOptions) parse(from, to string) error {
	var err error
	if o.From, err = apicmd.ParseTime("from", from); err != nil {
		return err
	}
	if o.To, err = apicmd.ParseTime("to", to); err != nil {
		return err
	}
	switch {
	case o.Since != 0 && !o.From.IsZero():
		return &cmdkit.FlagError{Err: errors.New("give --since or --from, not both")}
	case o.Since < 0:
		return &cmdkit.FlagError{Err: fmt.Errorf("--since %s: want a positive duration", o.Since)}
	case o.Group != GroupAction && o.Group != GroupNone:
		return &cmdkit.FlagError{Err: fmt.Errorf("--group %q: want %s or %s", o.Group, GroupAction, GroupNone)}
	case o.Limit < 0 || (o.Group == GroupNone && o.Limit > read.MaxAuditLimit):
		return &cmdkit.FlagError{Err: fmt.Errorf("--limit %d: want 1 to %d", o.Limit, read.MaxAuditLimit)}
	case o.Group == GroupAction && o.Limit > read.MaxTimelineLimit:
		return &cmdkit.FlagError{Err: fmt.Errorf("--limit %d: want 1 to %d (%d with --group none)", o.Limit, read.MaxTimelineLimit, read.MaxAuditLimit)}
	case !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To):
		return &cmdkit.FlagError{Err: errors.New("--from must be before --to")}
	}
	return nil
}

func auditRun(ctx context.Context, opts *AuditOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	f := projector.AuditFilter{Cluster: opts.Cluster, Namespace: opts.Namespace, Name: opts.App, Actor: opts.Actor,
		From: opts.From, To: opts.To, Limit: opts.Limit, Changes: !opts.Reads}
	if opts.Since > 0 {
		f.From = opts.Now().Add(-opts.Since)
	}
	if opts.Group == GroupAction {
		actions, err := c.Timeline(ctx, read.TimelineFilter{AuditFilter: f, Reads: opts.Reads})
		if err != nil {
			return opts.API.Explain(err)
		}
		return printActions(opts, actions)
	}
	entries, err := c.Audit(ctx, f)
	if err != nil {
		return opts.API.Explain(err)
	}
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, []string{cmdkit.Stamp(e.At), cmdkit.OrDash(e.Actor), strings.TrimPrefix(e.Type, "io.argosy."),
			cmdkit.OrDash(e.Cluster), object(e.AuditEntry), generation(e.Generation), result(e)})
	}
	if err := cmdkit.PrintOut(opts.IO.Out, opts.Output, entries,
		[]string{"TIME", "ACTOR", "TYPE", "CLUSTER", "OBJECT", "GEN", "RESULT"}, rows); err != nil {
		return err
	}
	for _, e := range entries {
		for _, side := range []struct {
			name string
			raw  json.RawMessage
		}{{"before", e.Before}, {"after", e.After}} {
			if why := apicmd.Omitted(side.raw); why != "" {
				fmt.Fprintf(opts.IO.Err, "Note: the spec %s the change of %s at %s (event %s) is %s\n",
					side.name, object(e.AuditEntry), cmdkit.Stamp(e.At), e.EventID, why)
			}
		}
	}
	return nil
}

// printActions prints the timeline's actions, and a note for each spec
// the answer left out.
func printActions(opts *AuditOptions, actions []read.Action) error {
	rows := make([][]string, 0, len(actions))
	for _, a := range actions {
		obj, gen := object(projector.AuditEntry{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name}), generation(a.Generation)
		if p := a.Placement; p != nil {
			obj, gen = "placements/"+p.Namespace+"/"+p.Name, generation(p.Generation)
		}
		actor := cmdkit.OrDash(a.Actor)
		if a.Via != "" {
			actor += " via " + a.Via
		}
		what := a.Action
		if what == "" {
			what = strings.TrimPrefix(a.Type, "io.argosy.")
		}
		rows = append(rows, []string{cmdkit.Stamp(a.At), actor, what, obj, gen, clusters(a), tally(a)})
	}
	if err := cmdkit.PrintOut(opts.IO.Out, opts.Output, actions,
		[]string{"TIME", "ACTOR", "ACTION", "OBJECT", "GEN", "CLUSTERS", "RESULT"}, rows); err != nil {
		return err
	}
	for _, a := range actions {
		for _, side := range []struct {
			name string
			raw  json.RawMessage
		}{{"before", a.Before}, {"after", a.After}} {
			if why := apicmd.Omitted(side.raw); why != "" {
				e := newestChange(a)
				fmt.Fprintf(opts.IO.Err, "Note: the spec %s the change of %s at %s (event %s) is %s\n",
					side.name, object(e), cmdkit.Stamp(e.At), e.EventID, why)
			}
		}
	}
	return nil
}

// newestChange is the entry whose spec an action carries.
func newestChange(a read.Action) projector.AuditEntry {
	for _, e := range a.Entries {
		if e.Kind != "api" {
			return e.AuditEntry
		}
	}
	return projector.AuditEntry{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, At: a.At}
}

func clusters(a read.Action) string {
	if a.Clusters == 0 {
		return "-"
	}
	return strconv.Itoa(a.Clusters)
}

// tally is what became of an action: refused or denied, or its changes'
// results counted.
func tally(a read.Action) string {
	switch a.Outcome {
	case "denied", "failed":
		return a.Outcome
	case "refused":
		return "refused: replay"
	}
	var out []string
	for _, n := range []struct {
		n    int
		what string
	}{{a.Results.Applied, "applied"}, {a.Results.Failed, "failed"}, {a.Results.Pending, "pending"}, {a.Results.Refused, "refused"}} {
		if n.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	return cmdkit.OrDash(strings.Join(out, ", "))
}

// object names what an entry is about: kind/namespace/name.
func object(e projector.AuditEntry) string {
	var parts []string
	for _, p := range []string{e.Kind, e.Namespace, e.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return cmdkit.OrDash(strings.Join(parts, "/"))
}

func generation(g int64) string {
	if g == 0 {
		return "-"
	}
	return strconv.FormatInt(g, 10)
}

// result is what became of an entry's event: refused as a replay (the
// reason is in -o json), or the clusters' acknowledgements of a change.
func result(e projector.AuditRow) string {
	if e.Refused != "" {
		return "refused: replay"
	}
	return results(e.Results)
}

// results summarizes the clusters' acknowledgements of a change.
func results(acks []projector.Ack) string {
	var out []string
	for _, a := range acks {
		r := "applied"
		switch {
		case !a.Applied:
			r = "rejected: " + a.Code
		case a.Result != "":
			r = "applied, " + a.Result
		}
		if len(acks) > 1 {
			r = a.Cluster + " " + r
		}
		out = append(out, r)
	}
	return cmdkit.OrDash(strings.Join(out, ", "))
}

// AuditVerifyOptions are the flags of `argosy audit verify`.
type AuditVerifyOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
}

// ErrChainBroken is returned by `argosy audit verify` when a chain does not
// hold.
var ErrChainBroken = errors.New("audit chain broken")

// NewCmdAuditVerify returns `argosy audit verify`.
func NewCmdAuditVerify(io cmdkit.IOStreams, runF func(context.Context, *AuditVerifyOptions) error) *cobra.Command {
	opts := &AuditVerifyOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit history's hash chains and report the first broken link",
		Long: `Have the server check the hash chain of every partition's audit entries,
from the first entry, and report the first broken link of each: an entry
changed, removed, inserted or reordered after it was recorded.

It exits 0 when every chain holds and 1 when one does not. The hash is
documented in docs/projector.md, so a chain can also be checked without
Argosy.`,
		Example: `  argosy audit verify
  argosy audit verify -o json`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return auditVerifyRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	apicmd.AddFlags(cmd, &opts.API)
	return cmd
}

func auditVerifyRun(ctx context.Context, opts *AuditVerifyOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	v, err := c.VerifyAudit(ctx)
	if err != nil {
		return opts.API.Explain(err)
	}
	rows := make([][]string, 0, len(v.Partitions))
	for _, p := range v.Partitions {
		status := "ok"
		if p.Broken != nil {
			status = fmt.Sprintf("broken at offset %d: %s", p.Broken.Offset, p.Broken.Reason)
		}
		rows = append(rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.FormatInt(p.Entries, 10), status})
	}
	if err := cmdkit.PrintOut(opts.IO.Out, opts.Output, v, []string{"TOPIC", "PARTITION", "ENTRIES", "STATUS"}, rows); err != nil {
		return err
	}
	if b := v.Broken; b != nil {
		return fmt.Errorf("%w: %s partition %d at offset %d: %s", ErrChainBroken, b.Topic, b.Partition, b.Offset, b.Reason)
	}
	return nil
}
