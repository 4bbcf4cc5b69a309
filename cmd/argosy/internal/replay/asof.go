package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector"
)

// AsOfOptions are the flags of `argosy replay as-of`.
type AsOfOptions struct {
	IO     cmdkit.IOStreams
	Log    LogOptions
	Query  projector.AsOfQuery
	Output string
	// configPartition is --config-partition; negative: computed.
	configPartition int
	now             func() time.Time
}

// NewCmdAsOf returns `argosy replay as-of`.
func NewCmdAsOf(io cmdkit.IOStreams, runF func(context.Context, *AsOfOptions) error) *cobra.Command {
	opts := &AsOfOptions{IO: io, now: time.Now}
	cmd := &cobra.Command{
		Use:   "as-of TIME --cluster NAME [--app NAME]",
		Short: "Show what the log says held on a cluster at a time",
		Long: `as-of prints, for cluster --cluster at TIME (RFC 3339), each Application as
the hub wanted it and as the cluster last reported it, and the event each
comes from: the answer the log gives, whatever the views hold now.

It reads the cluster's config partition from its start up to TIME
(desired state is everything the hub ever said about the cluster) and
its status partition for --status-window before TIME (65m: a spoke sends
every Application's whole status at least once an hour), passes over
other clusters' records by their key, and verifies every event of the
cluster against the keys of the trust topic, as the projector does. It
prints the ranges it read. A cluster pinned to a config partition of its
own (its registration's partition) needs --config-partition.`,
		Example: `  # What ran on prod-eu on the first of November?
  argosy replay as-of 2026-11-01T00:00:00Z --cluster prod-eu --hub-key hub.pub

  # One Application, as JSON, with the events it came from
  argosy replay as-of 2026-11-01T12:00:00Z --cluster prod-eu --app guestbook -o json`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.parse(args[0]); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return asOfRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	fs := cmd.Flags()
	opts.Log.bind(fs)
	fs.StringVar(&opts.Query.Cluster, "cluster", "", "the cluster (required)")
	fs.StringVar(&opts.Query.App, "app", "", "only the Applications of this name")
	fs.DurationVar(&opts.Query.StatusWindow, "status-window", projector.DefaultStatusWindow, "how far before TIME the cluster's status is read")
	fs.IntVar(&opts.configPartition, "config-partition", -1, "the cluster's config partition, for a cluster pinned to one (default: where its name hashes)")
	return cmd
}

func (o *AsOfOptions) parse(at string) error {
	errs := o.Log.validate()
	t, err := apicmd.ParseTime("TIME", at)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("TIME %q: want an RFC 3339 time such as 2026-03-02T15:04:05Z", at))
	case t.IsZero():
		errs = append(errs, errors.New("TIME is required"))
	case t.After(o.now()):
		errs = append(errs, fmt.Errorf("TIME %s is in the future: the log holds nothing after now", at))
	}
	o.Query.At = t
	if o.Query.Cluster == "" {
		errs = append(errs, errors.New("--cluster is required"))
	}
	if o.Query.StatusWindow <= 0 {
		errs = append(errs, errors.New("--status-window must be a positive duration"))
	}
	if o.configPartition >= 0 {
		p := int32(o.configPartition) //nolint:gosec // a partition number fits an int32
		o.Query.ConfigPartition = &p
	}
	if err := errors.Join(errs...); err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	return nil
}

func asOfRun(ctx context.Context, o *AsOfOptions) error {
	log := warnings(o.IO)
	rd, err := o.Log.open(ctx, log)
	if err != nil {
		return err
	}
	defer rd.tel.ShutdownLogged(ctx, log)
	res, err := projector.AsOf(ctx, rd.conn, rd.anchors, o.Query, rd.opts...)
	if err != nil {
		return err
	}
	if o.Output != "table" {
		return cmdkit.PrintOut(o.IO.Out, o.Output, res, nil, nil)
	}
	return printAsOf(o, res)
}

func printAsOf(o *AsOfOptions, res *projector.AsOfResult) error {
	w := o.IO.Out
	head := [][2]string{{"Cluster", res.Cluster}, {"As of", res.At.UTC().Format(time.RFC3339Nano)}}
	if r := res.Registration; r != nil {
		head = append(head, [2]string{"Registered", fmt.Sprintf("%s at %s, labels %s", cmdkit.YesNo(r.Registered), cmdkit.Stamp(r.RegisteredAt), cmdkit.Pairs(r.Labels))})
	}
	if b := res.Heartbeat; b != nil {
		head = append(head, [2]string{"Last heartbeat", fmt.Sprintf("%s (agent %s, %s, %d Applications)", cmdkit.Stamp(b.At), b.AgentVersion, b.Mode, b.Applications)})
	}
	for _, r := range res.Read {
		head = append(head, [2]string{"Read", fmt.Sprintf("%s/%d offsets %d to %d, %d events of the cluster", r.Topic, r.Partition, r.From, r.To, r.Events)})
	}
	if err := cmdkit.PrintFields(w, head); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	rows := make([][]string, 0, len(res.Apps))
	for _, a := range res.Apps {
		gen, deleted, from, sync, health, applied, statusFrom := "-", "", "-", "-", "-", "-", "-"
		if d := a.Desired; d != nil {
			gen = strconv.FormatInt(d.Generation, 10)
			if d.Deleted {
				deleted = " (deleted)"
			}
		}
		if f := a.DesiredFrom; f != nil {
			from = ref(f)
		}
		if ob := a.Observed; ob != nil {
			if ob.Sync != nil {
				sync = ob.Sync.Status
			}
			if ob.Health != nil {
				health = ob.Health.Status
			}
			applied = strconv.FormatInt(ob.AppliedGeneration, 10)
		}
		if f := a.ObservedFrom; f != nil {
			statusFrom = ref(f)
		}
		rows = append(rows, []string{a.Namespace, a.Name, gen + deleted, from, sync, health, applied, statusFrom})
	}
	return cmdkit.PrintOut(w, "table", nil, []string{"NAMESPACE", "NAME", "GENERATION", "FROM", "SYNC", "HEALTH", "APPLIED", "STATUS FROM"}, rows)
}

// ref names an event for a table: its place in the log and its time.
func ref(e *projector.EventRef) string {
	return fmt.Sprintf("%s/%d@%d %s", e.Topic, e.Partition, e.Offset, cmdkit.Stamp(e.LogTime))
}
