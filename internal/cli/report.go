package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/projector/read"
)

// NewCmdReport returns `argosy report`, the reports over the fleet's history.
func NewCmdReport(io IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report on the fleet's history",
	}
	cmd.AddCommand(NewCmdReportDeployments(io, nil))
	return cmd
}

// reportFormats are the formats of `argosy report deployments`.
var reportFormats = []string{"table", "json", "yaml", "csv"}

// ReportDeploymentsOptions are the flags of `argosy report deployments`.
type ReportDeploymentsOptions struct {
	IO     IOStreams
	API    APIOptions
	Output string
	read.ReportParams
}

// NewCmdReportDeployments returns `argosy report deployments`.
func NewCmdReportDeployments(io IOStreams, runF func(context.Context, *ReportDeploymentsOptions) error) *cobra.Command {
	opts := &ReportDeploymentsOptions{IO: io}
	var from, to string
	cmd := &cobra.Command{
		Use:   "deployments",
		Short: "Report deployment frequency, lead time, change failure rate and time to restore",
		Long: `Report the four DORA figures of the deployments that finished between --from
and --to (by default, the 30 days before now), per group and per day or
week (UTC; weeks start on Monday):
  DEPLOYS       deployment frequency: deployments that finished in the bucket
  FAILED        how many of them failed, and the change failure rate
  LEAD TIME     the median lead time for changes
  RESTORE       the median time from a failed deployment to the next good one
A row marked incomplete has a deployment gap: the cluster's agent cannot
prove it recorded every deployment, so the figures may be low.`,
		Example: `  argosy report deployments --by app
  argosy report deployments --by cluster --bucket week --from 2026-01-01T00:00:00Z
  argosy report deployments --by label --label team -o csv > deployments.csv`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output, reportFormats); err != nil {
				return err
			}
			if err := opts.parse(from, to); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reportDeploymentsRun(c.Context(), opts)
		},
	}
	addOutputFlagOf(cmd, &opts.Output, reportFormats)
	addAPIFlags(cmd, &opts.API)
	f := cmd.Flags()
	f.StringVar(&opts.By, "by", "", "group by: "+strings.Join(read.Groupings, "|")+" (required)")
	f.StringVar(&opts.Label, "label", "", "the label key to group by, with --by label")
	f.StringVar(&opts.Bucket, "bucket", read.BucketDay, "bucket of time: "+strings.Join(read.Buckets, "|"))
	f.StringVar(&from, "from", "", "only deployments that finished at or after this RFC 3339 time (default: 30 days before --to)")
	f.StringVar(&to, "to", "", "only deployments that finished before this RFC 3339 time (default: now)")
	for flag, values := range map[string][]string{"by": read.Groupings, "bucket": read.Buckets} {
		if err := cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
			cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("%s flag completion: %w", flag, err) }
		}
	}
	return cmd
}

func (o *ReportDeploymentsOptions) parse(from, to string) error {
	var err error
	if o.From, err = parseTime("from", from); err != nil {
		return err
	}
	if o.To, err = parseTime("to", to); err != nil {
		return err
	}
	switch {
	case o.By == "":
		return &FlagError{Err: fmt.Errorf("--by is required: one of %s", strings.Join(read.Groupings, ", "))}
	case !slices.Contains(read.Groupings, o.By):
		return &FlagError{Err: fmt.Errorf("--by %q: want one of %s", o.By, strings.Join(read.Groupings, ", "))}
	case !slices.Contains(read.Buckets, o.Bucket):
		return &FlagError{Err: fmt.Errorf("--bucket %q: want one of %s", o.Bucket, strings.Join(read.Buckets, ", "))}
	case o.By == read.ByLabel && o.Label == "":
		return &FlagError{Err: fmt.Errorf("--by label needs --label KEY")}
	case o.By != read.ByLabel && o.Label != "":
		return &FlagError{Err: fmt.Errorf("--label goes with --by label only")}
	case !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To):
		return &FlagError{Err: fmt.Errorf("--from must be before --to")}
	}
	return nil
}

func reportDeploymentsRun(ctx context.Context, opts *ReportDeploymentsOptions) error {
	c, err := opts.API.client()
	if err != nil {
		return err
	}
	r, err := c.DeploymentReport(ctx, opts.ReportParams)
	if err != nil {
		return err
	}
	if opts.Output == "csv" {
		rows := make([][]string, 0, len(r.Rows))
		for _, row := range r.Rows {
			rows = append(rows, []string{row.Group, row.Start.UTC().Format(time.RFC3339), strconv.Itoa(row.Deployments),
				strconv.Itoa(row.Failed), number(row.ChangeFailureRate), number(row.LeadTimeSeconds),
				number(row.TimeToRestoreSeconds), strconv.FormatBool(row.Incomplete)})
		}
		return printCSV(opts.IO.Out, []string{"group", "start", "deployments", "failed", "change_failure_rate",
			"lead_time_seconds", "time_to_restore_seconds", "incomplete"}, rows)
	}
	rows := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		note := "-"
		if row.Incomplete {
			note = "incomplete"
		}
		rows = append(rows, []string{orDash(row.Group), row.Start.UTC().Format(time.DateOnly), strconv.Itoa(row.Deployments),
			fmt.Sprintf("%d (%s)", row.Failed, percent(row.ChangeFailureRate)), seconds(row.LeadTimeSeconds),
			seconds(row.TimeToRestoreSeconds), note})
	}
	header := []string{strings.ToUpper(r.By), strings.ToUpper(r.Bucket), "DEPLOYS", "FAILED", "LEAD TIME", "RESTORE", "NOTE"}
	if r.By == read.ByLabel {
		header[0] = "LABEL " + r.Label
	}
	return printOut(opts.IO.Out, opts.Output, r, header, rows)
}

// number formats an optional figure for CSV: empty when absent.
func number(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func percent(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f*100, 'f', 0, 64) + "%"
}

// seconds formats an optional duration in seconds, to the second, without
// trailing zero units: 2m, 1h30m, 45s.
func seconds(f *float64) string {
	if f == nil {
		return "-"
	}
	s := time.Duration(*f * float64(time.Second)).Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
