package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/argosyproj/argosy/cmd/argosy/internal/readapi"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// RebuildOptions are the flags of `argosy replay rebuild`.
type RebuildOptions struct {
	IO          cmdkit.IOStreams
	Kafka       kafkaconn.Options
	Store       string
	TopicPrefix string
	HubKeyFile  string
	From        projector.From
	MaxRecords  int
	ClockMargin time.Duration
	// CreateTime accepts records stamped with CreateTime: argosy dev's
	// embedded broker stamps them so (docs/dev.md).
	CreateTime bool
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
	opts.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&opts.Store, "store", "", "the new store to rebuild into: sqlite://PATH or postgres://… (required)")
	fs.StringVar(&opts.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&opts.HubKeyFile, "hub-key", cmdkit.Env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64: the trust anchor (env ARGOSY_HUB_KEY)")
	fs.BoolVar(&fromStart, "from-start", false, "fold from the earliest record the broker holds (the default)")
	fs.StringVar(&fromTime, "from-time", "", "fold from the first record appended at or after this RFC 3339 time")
	fs.StringVar(&fromOffsets, "from-offsets", "", "fold the partitions named from these offsets, TOPIC/PARTITION=OFFSET,… (the rest from the start, or --from-time)")
	fs.IntVar(&opts.MaxRecords, "max-records", 10_000, "records folded per store transaction at most")
	fs.DurationVar(&opts.ClockMargin, "clock-margin", 2*time.Second,
		"how far the Kafka brokers' clocks may be behind this host's, as the projector's --clock-margin")
	fs.BoolVar(&opts.CreateTime, "accept-create-time", false, "accept records the broker did not stamp with LogAppendTime (argosy dev's embedded broker)")
	fs.BoolVarP(&opts.Quiet, "quiet", "q", false, "show no progress")
	return cmd
}

// parse checks and sets the options that need more than a flag's type.
func (o *RebuildOptions) parse(fromStart bool, fromTime, fromOffsets string) error {
	errs := []error{o.Kafka.Validate()}
	if o.HubKeyFile == "" {
		errs = append(errs, errors.New("--hub-key is required"))
	}
	switch {
	case o.Store == "":
		errs = append(errs, errors.New("--store is required: the new store to rebuild into"))
	case !strings.HasPrefix(o.Store, "sqlite://") && !sqlstore.IsPostgres(o.Store):
		errs = append(errs, fmt.Errorf("--store %q: want sqlite://PATH or postgres://…", o.Store))
	}
	if fromStart && (fromTime != "" || fromOffsets != "") {
		errs = append(errs, errors.New("--from-start takes neither --from-time nor --from-offsets"))
	}
	t, err := readapi.ParseTime("from-time", fromTime)
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
	if o.ClockMargin <= 0 {
		errs = append(errs, errors.New("--clock-margin must be a positive duration"))
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
	log := slog.New(slog.NewTextHandler(o.IO.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tel, err := telemetry.Setup(ctx, "argosy-replay", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	hub, err := events.LoadPublicKey(o.HubKeyFile)
	if err != nil {
		return err
	}
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(ctx, o.Store)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.ErrorContext(ctx, "close the store", "err", err)
		}
	}()
	bar := newBar(o)
	var last projector.Progress
	opts := []projector.Option{projector.WithTopics(events.DefaultTopics(o.TopicPrefix)),
		projector.WithMaxRecords(o.MaxRecords), projector.WithClockMargin(o.ClockMargin),
		projector.WithClientOpts(tel.KafkaOpts), projector.WithLogger(log),
		projector.WithProgress(func(p projector.Progress) { last = p; bar.show(p) })}
	if o.CreateTime {
		opts = append(opts, projector.WithDecoderOptions(events.AcceptCreateTime()))
	}
	rb, err := projector.NewRebuild(conn, store, []events.Key{events.HubAnchor("hub", hub)}, o.From, opts...)
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

// bar is rebuild's progress bar on stderr, or nothing when stderr is not a
// terminal or -q is set.
type bar struct {
	b *progressbar.ProgressBar
	o *RebuildOptions
}

func newBar(o *RebuildOptions) *bar {
	f, ok := o.IO.Err.(*os.File)
	if o.Quiet || !ok || !term.IsTerminal(int(f.Fd())) { //nolint:gosec // a descriptor fits an int
		return &bar{}
	}
	return &bar{o: o}
}

func (b *bar) show(p projector.Progress) {
	if b.o == nil {
		return
	}
	if b.b == nil {
		b.b = progressbar.NewOptions64(p.Total, progressbar.OptionSetWriter(b.o.IO.Err),
			progressbar.OptionSetDescription("rebuilding"), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString("records"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	b.b.Describe(fmt.Sprintf("rebuilding: %d events folded, %d refused", p.Events, p.Refused))
	if err := b.b.Set64(p.Records); err != nil {
		b.o = nil // the terminal is gone: show no more
	}
}

func (b *bar) finish() {
	if b.b == nil {
		return
	}
	if err := b.b.Finish(); err != nil {
		b.o = nil
	}
}
