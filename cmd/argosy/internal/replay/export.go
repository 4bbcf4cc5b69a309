package replay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/export"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
)

// ExportOptions are the flags of `argosy export`.
type ExportOptions struct {
	IO          cmdkit.IOStreams
	Kafka       kafkaconn.Options
	TopicPrefix string
	// Roles are the topic roles --topics names; Range.Topics their names.
	Roles  []string
	Range  export.Range
	Format string
	Out    string
	Quiet  bool
	Output string
	now    func() time.Time
	flags  *pflag.FlagSet
}

// exportRoles are the topic roles export takes, the first four its default.
var exportRoles = []events.Topic{events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit,
	events.TopicTrust, events.TopicDeadLetter, events.TopicDesired, events.TopicPlacements}

// NewCmdExport returns `argosy export`.
func NewCmdExport(io cmdkit.IOStreams, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{IO: io, now: time.Now}
	var from, to string
	cmd := &cobra.Command{
		Use:   "export --out FILE [--topics config,status,deployments,audit] [--from T] [--to T] [--format jsonl|csv|parquet]",
		Short: "Write the log's events to a file for data platforms",
		Long: `export writes the events of the topics --topics names, appended from --from
(default: the start) until --to (default: the end each partition has when
the export begins), to --out: one row per event, with its topic,
partition, offset, log time and key, its CloudEvents attributes (id,
source, type, specversion, subject, time, datacontenttype, dataschema,
partitionkey, dssematerial, sig, signedextattrs) as columns and its data as
JSON. docs/replay.md lists the columns and their types.

--format is jsonl (one JSON object a line), csv (a header line, RFC 4180)
or parquet (a typed column per attribute, zstd, 65,536 rows a row group),
by default the one --out's extension names. Rows come in offset order
within each partition. Memory stays bounded: export holds one poll of
records and one Parquet row group at a time.

Events are written as the log holds them, signatures unchecked: the
dssematerial or sig column carries each signature for a reader that verifies.
Records that are not CloudEvents are skipped with a warning. The file
appears only when the export is complete: until then it is FILE.*.partial,
removed on failure or Ctrl-C. With --out -, rows go to stdout and no
summary is printed. A progress bar goes to stderr when it is a terminal,
unless -q.

The broker and the topic prefix, when no flag or environment variable
gives them, come from the context --context names, else the current one,
when it names its log: argosy dev's context does.`,
		Example: `  # Every event of November, as Parquet for Spark, DuckDB or ClickHouse
  argosy export --kafka-brokers kafka:9092 --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z --out nov.parquet

  # The audit topic alone, as JSON Lines, into jq
  argosy export --topics audit --out - -q | jq -r '[.time, .subject, .type] | @tsv'

  # Then, in DuckDB
  duckdb -c "SELECT type, count(*) FROM 'nov.parquet' GROUP BY type"`,
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
			return exportRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	fs := cmd.Flags()
	opts.flags = fs
	bindContext(fs)
	opts.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&opts.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	names := topicNames()
	fs.StringSliceVar(&opts.Roles, "topics", names[:4], "the topics to export, by role: "+strings.Join(names, ", "))
	fs.StringVar(&from, "from", "", "export the records appended at or after this RFC 3339 time (default: the start)")
	fs.StringVar(&to, "to", "", "export the records appended before this RFC 3339 time (default: the end when the export begins)")
	fs.StringVar(&opts.Format, "format", "", "jsonl, csv or parquet (default: --out's extension, else jsonl)")
	fs.StringVar(&opts.Out, "out", "", "the file to write, or - for stdout (required)")
	fs.BoolVarP(&opts.Quiet, "quiet", "q", false, "show no progress")
	if err := cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(export.Formats, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(err)
	}
	if err := cmd.RegisterFlagCompletionFunc("topics", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(err)
	}
	return cmd
}

// parse checks and sets the options that need more than a flag's type.
func (o *ExportOptions) parse(from, to string) error {
	var errs []error
	if o.flags != nil {
		errs = append(errs, fromContext(o.flags, logSettings{kafka: &o.Kafka, prefix: &o.TopicPrefix}))
	}
	errs = append(errs, kafkaError(&o.Kafka))
	topics := events.DefaultTopics(o.TopicPrefix)
	o.Range.Topics = nil
	for _, r := range o.Roles {
		name, ok := topics[events.Topic(r)]
		if !ok {
			errs = append(errs, fmt.Errorf("--topics: unknown topic %q: want some of %s", r, strings.Join(topicNames(), ", ")))
			continue
		}
		if !slices.Contains(o.Range.Topics, name) {
			o.Range.Topics = append(o.Range.Topics, name)
		}
	}
	if len(o.Roles) == 0 {
		errs = append(errs, errors.New("--topics names no topic"))
	}
	var err error
	if o.Range.From, err = apicmd.ParseTime("from", from); err != nil {
		errs = append(errs, err)
	} else if o.Range.From.After(o.now()) {
		errs = append(errs, fmt.Errorf("--from %s is in the future: the log holds nothing after now", from))
	}
	if o.Range.To, err = apicmd.ParseTime("to", to); err != nil {
		errs = append(errs, err)
	} else if !o.Range.To.IsZero() && !o.Range.To.After(o.Range.From) {
		errs = append(errs, fmt.Errorf("--to %s is not after --from: the range is empty", to))
	}
	switch {
	case o.Out == "":
		errs = append(errs, errors.New("--out is required: a file, or - for stdout"))
	case o.Format == "":
		o.Format = strings.TrimPrefix(filepath.Ext(o.Out), ".")
		if !slices.Contains(export.Formats, o.Format) {
			o.Format = "jsonl"
		}
	case !slices.Contains(export.Formats, o.Format):
		errs = append(errs, fmt.Errorf("--format %q: want one of %s", o.Format, strings.Join(export.Formats, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	return nil
}

func topicNames() []string {
	out := make([]string, len(exportRoles))
	for i, r := range exportRoles {
		out[i] = string(r)
	}
	return out
}

// exportResult is what export prints when it is done.
type exportResult struct {
	File   string `json:"file"`
	Format string `json:"format"`
	export.Progress
	Bytes         int64   `json:"bytes"`
	RowsPerSecond float64 `json:"rowsPerSecond"`
}

func exportRun(ctx context.Context, o *ExportOptions) error {
	log := warnings(o.IO)
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, "argosy-export", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	out, finish, err := o.create()
	if err != nil {
		return err
	}
	last, err := o.write(ctx, slices.Concat(conn, tel.KafkaOpts("export")), out, log)
	if err = finish(err); err != nil || o.Out == "-" {
		return err
	}
	res := exportResult{File: o.Out, Format: o.Format, Progress: last}
	if st, err := os.Stat(o.Out); err == nil {
		res.Bytes = st.Size()
	}
	if s := last.Elapsed.Seconds(); s > 0 {
		res.RowsPerSecond = float64(last.Rows) / s
	}
	if o.Output != "table" {
		return cmdkit.PrintOut(o.IO.Out, o.Output, res, nil, nil)
	}
	return cmdkit.PrintFields(o.IO.Out, [][2]string{
		{"File", res.File}, {"Format", res.Format}, {"Rows", strconv.FormatInt(res.Rows, 10)},
		{"Records skipped", strconv.FormatInt(res.Skipped, 10)}, {"Bytes", strconv.FormatInt(res.Bytes, 10)},
		{"Took", res.Elapsed.Round(time.Millisecond).String()},
		{"Rows/s", strconv.FormatFloat(res.RowsPerSecond, 'f', 0, 64)},
	})
}

// write exports o.Range to out in o.Format, showing progress.
func (o *ExportOptions) write(ctx context.Context, conn []kgo.Opt, out io.Writer, log *slog.Logger) (export.Progress, error) {
	buf := bufio.NewWriterSize(out, 1<<20)
	w, err := export.NewWriter(o.Format, buf)
	if err != nil {
		return export.Progress{}, err
	}
	bar := newBar(o.IO, o.Quiet, "records")
	var last export.Progress
	err = export.Export(ctx, conn, o.Range, w, log, func(p export.Progress) {
		last = p
		bar.show(p.Records, p.Total, fmt.Sprintf("exporting: %d rows, %d skipped", p.Rows, p.Skipped))
	})
	bar.finish()
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		return last, fmt.Errorf("export: %w", err)
	}
	return last, nil
}

// create opens where rows go: stdout, or a partial file beside --out.
// finish closes it and, if the export went well, renames it to --out;
// else it removes it. finish returns the export's error, else its own.
func (o *ExportOptions) create() (out io.Writer, finish func(error) error, err error) {
	if o.Out == "-" {
		return o.IO.Out, func(err error) error { return err }, nil
	}
	f, err := os.CreateTemp(filepath.Dir(o.Out), filepath.Base(o.Out)+".*.partial")
	if err != nil {
		return nil, nil, fmt.Errorf("--out %s: %w", o.Out, err)
	}
	return f, func(err error) error {
		err = errors.Join(err, f.Close())
		if err == nil {
			err = os.Rename(f.Name(), o.Out)
		}
		if err != nil {
			if rmErr := os.Remove(f.Name()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				err = errors.Join(err, rmErr)
			}
		}
		return err
	}, nil
}
