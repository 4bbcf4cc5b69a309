package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// RebuildOptions are the flags of `argosy replay rebuild`.
type RebuildOptions struct {
	IO         cmdkit.IOStreams
	Log        LogOptions
	Store      string
	From       projector.From
	MaxRecords int
	Quiet      bool
	Output     string
	// now is the clock --from-time is checked against.
	now func() time.Time
}

// NewCmdRebuild returns `argosy replay rebuild`.
func NewCmdRebuild(io cmdkit.IOStreams, runF func(context.Context, *RebuildOptions) error) *cobra.Command {
	opts := &RebuildOptions{IO: io, now: time.Now}
	var fromStart bool
	var fromTime, fromOffsets string
	cmd := &cobra.Command{
		Use:   "rebuild --store DSN [--from-start | --from-time T | --from-offsets TOPIC/PARTITION=OFFSET,…]",
		Short: "Fold the log into a new store with the projector's fold step",
		Long: `rebuild reads the config, status, deployments and audit topics, from the
start (the default), from a time, or from given offsets, to the end each
partition has when it begins, and folds them into the store --store names
with the projector's own fold step, judging every record against the keys
of the trust topic as the live projector does. The store must hold no
views yet: rebuild refuses one that does, the live store included, and
changes nothing in it.

Rebuilt from the start, the store holds the rows, audit chains and
offsets the live store holds at the same offsets; 'argosy replay diff'
checks that, and docs/replay.md shows how to swap it in. A progress bar
(records/s, ETA) goes to stderr when it is a terminal, unless -q.`,
		Example: `  # Rebuild every view into a new SQLite file
  argosy replay rebuild --kafka-brokers kafka:9092 --hub-key hub.pub --store sqlite:///var/lib/argosy/rebuilt.db

  # From the records appended since a time, into PostgreSQL
  argosy replay rebuild --hub-key hub.pub --from-time 2026-11-01T00:00:00Z --store postgres://argosy@db/rebuilt

  # Then compare it with the live store
  argosy replay diff sqlite:///var/lib/argosy/views.db sqlite:///var/lib/argosy/rebuilt.db`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.parse(fromStart, fromTime, fromOffsets); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return rebuildRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	fs := cmd.Flags()
	opts.Log.bind(fs)
	fs.StringVar(&opts.Store, "store", "", "the new store to rebuild into: sqlite://PATH or postgres://… (required)")
	fs.BoolVar(&fromStart, "from-start", false, "fold from the earliest record the broker holds (the default)")
	fs.StringVar(&fromTime, "from-time", "", "fold from the first record appended at or after this RFC 3339 time")
	fs.StringVar(&fromOffsets, "from-offsets", "", "fold the partitions named from these offsets, TOPIC/PARTITION=OFFSET,… (the rest from the start, or --from-time)")
	fs.IntVar(&opts.MaxRecords, "max-records", 10_000, "records folded per store transaction at most")
	fs.BoolVarP(&opts.Quiet, "quiet", "q", false, "show no progress")
	return cmd
}

// parse checks and sets the options that need more than a flag's type.
func (o *RebuildOptions) parse(fromStart bool, fromTime, fromOffsets string) error {
	errs := o.Log.validate()
	switch {
	case o.Store == "":
		errs = append(errs, errors.New("--store is required: the new store to rebuild into"))
	case !strings.HasPrefix(o.Store, "sqlite://") && !sqlstore.IsPostgres(o.Store):
		errs = append(errs, fmt.Errorf("--store %q: want sqlite://PATH or postgres://…", o.Store))
	}
	if fromStart && (fromTime != "" || fromOffsets != "") {
		errs = append(errs, errors.New("--from-start takes neither --from-time nor --from-offsets"))
	}
	t, err := apicmd.ParseTime("from-time", fromTime)
	if err != nil {
		errs = append(errs, err)
	} else if t.After(o.now()) {
		errs = append(errs, fmt.Errorf("--from-time %s is in the future: the log holds nothing after now", fromTime))
	}
	o.From.Time = t
	if o.From.Offsets, err = parseOffsets(fromOffsets); err != nil {
		errs = append(errs, err)
	}
	if o.MaxRecords <= 0 {
		errs = append(errs, errors.New("--max-records must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	return nil
}

// parseOffsets parses --from-offsets: TOPIC/PARTITION=OFFSET, comma
// separated. Kafka's topic names hold neither '/' nor '='.
func parseOffsets(v string) (map[projector.Partition]int64, error) {
	if v == "" {
		return nil, nil
	}
	out := map[projector.Partition]int64{}
	for item := range strings.SplitSeq(v, ",") {
		tp, off, ok1 := strings.Cut(strings.TrimSpace(item), "=")
		topic, part, ok2 := strings.Cut(tp, "/")
		p, err1 := strconv.ParseInt(part, 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if !ok1 || !ok2 || topic == "" || err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("--from-offsets: %q: want TOPIC/PARTITION=OFFSET, e.g. argosy.status/3=1200", item)
		}
		out[projector.Partition{Topic: topic, Partition: int32(p)}] = o
	}
	return out, nil
}

// rebuildResult is what rebuild prints when it is done.
type rebuildResult struct {
	Store string `json:"store"`
	projector.Progress
	EventsPerSecond float64 `json:"eventsPerSecond"`
}

func rebuildRun(ctx context.Context, o *RebuildOptions) error {
	log := warnings(o.IO)
	rd, err := o.Log.open(ctx, log)
	if err != nil {
		return err
	}
	defer rd.tel.ShutdownLogged(ctx, log)
	store, err := sqlstore.Open(ctx, o.Store)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.ErrorContext(ctx, "close the store", "err", err)
		}
	}()
	bar := newBar(o.IO, o.Quiet, "records")
	var last projector.Progress
	opts := slices.Concat(rd.opts, []projector.Option{projector.WithMaxRecords(o.MaxRecords),
		projector.WithProgress(func(p projector.Progress) {
			last = p
			bar.show(p.Records, p.Total, fmt.Sprintf("rebuilding: %d events folded, %d refused", p.Events, p.Refused))
		})})
	rb, err := projector.NewRebuild(rd.conn, store, rd.anchors, o.From, opts...)
	if err != nil {
		return err
	}
	err = rb.Run(ctx)
	bar.finish()
	if err != nil {
		return fmt.Errorf("rebuild into %s: %w", o.Store, err)
	}
	res := rebuildResult{Store: o.Store, Progress: last}
	if s := last.Elapsed.Seconds(); s > 0 {
		res.EventsPerSecond = float64(last.Events) / s
	}
	if o.Output != "table" {
		return cmdkit.PrintOut(o.IO.Out, o.Output, res, nil, nil)
	}
	return cmdkit.PrintFields(o.IO.Out, [][2]string{
		{"Store", res.Store}, {"Partitions", strconv.Itoa(res.Partitions)},
		{"Records", strconv.FormatInt(res.Records, 10)}, {"Events folded", strconv.FormatInt(res.Events, 10)},
		{"Records refused", strconv.FormatInt(res.Refused, 10)}, {"Took", res.Elapsed.Round(time.Millisecond).String()},
		{"Events/s", strconv.FormatFloat(res.EventsPerSecond, 'f', 0, 64)},
	})
}

// bar is a progress bar on stderr, or nothing when stderr is not a
// terminal or -q is set.
type bar struct {
	b    *progressbar.ProgressBar
	w    io.Writer
	unit string
}

func newBar(streams cmdkit.IOStreams, quiet bool, unit string) *bar {
	f, ok := streams.Err.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) { //nolint:gosec // a descriptor fits an int
		return &bar{}
	}
	return &bar{w: streams.Err, unit: unit}
}

// show sets the bar to done of total, described by what.
func (b *bar) show(done, total int64, what string) {
	if b.w == nil {
		return
	}
	if b.b == nil {
		b.b = progressbar.NewOptions64(total, progressbar.OptionSetWriter(b.w),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(b.unit),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	b.b.Describe(what)
	if err := b.b.Set64(done); err != nil {
		b.w = nil // the terminal is gone: show no more
	}
}

func (b *bar) finish() {
	if b.b == nil || b.w == nil {
		return
	}
	if err := b.b.Finish(); err != nil {
		b.w = nil
	}
}
