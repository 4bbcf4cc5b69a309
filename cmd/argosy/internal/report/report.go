// Package report is `argosy report`, the reports over the fleet's history:
// `report deployments`, the DORA figures, and `report rollouts`, how each
// placement change reached the fleet, from the read API.
package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
	argosyreport "github.com/argosyproj/argosy/projector/report"
)

// NewCmdReport returns `argosy report`, the reports over the fleet's history.
func NewCmdReport(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report on the fleet's history",
	}
	cmd.AddCommand(NewCmdReportDeployments(io, nil), NewCmdReportRollouts(io, nil))
	return cmd
}

// reportFormats are the formats of `argosy report deployments`.
var reportFormats = []string{"table", "json", "yaml", "csv"}

// ReportDeploymentsOptions are the flags of `argosy report deployments`.
type ReportDeploymentsOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
	read.ReportParams
}

// NewCmdReportDeployments returns `argosy report deployments`.
func NewCmdReportDeployments(io cmdkit.IOStreams, runF func(context.Context, *ReportDeploymentsOptions) error) *cobra.Command {
	opts := &ReportDeploymentsOptions{IO: io}
	var by, bucket, from, to string
	cmd := &cobra.Command{
		Use:   "deployments",
		Short: "Report deployment frequency, change failure rate, time to restore and lead time",
		Long: `Report the four DORA figures of the deployments that finished between --from
and --to (by default, the 30 days before now), per group and per day or ISO
week (UTC; weeks start on Monday). docs/projector.md defines each:
  DEPLOYS       successful deployments, and PER DAY, the deployment frequency
                over the span the records cover (from the first record, if
                after --from, to now, if before --to); under a day, the
                count and its span, such as "3 in 5h 12m"
  FAILURES      failed syncs, and FAILURE RATE, failures / (deploys + failures)
  UNCHANGED     syncs left out of both: re-syncs that changed nothing and
                self-heals that reverted drift
  DEGRADED      times an Application turned Degraded after a good deployment
  RESTORE       the median failed deployment recovery time: from a failure
                or a Degraded turn until the Application is deployed and
                Healthy again; UNRESTORED counts those not recovered yet
  LEAD TIME     the median time from commit to deployment, where known
  GAPS          deployment gaps: the agent cannot prove it recorded every
                deployment, so that group's numbers may be too low

With --by app the table has one row per Application over the whole range,
summed over its clusters (CLUSTERS counts them); --app NAMESPACE/NAME
lists that Application's clusters. Other groupings have one row per group
and bucket. The line under the table says the span the records cover. The
JSON and CSV carry the rows per group and bucket (by app, per cluster);
the JSON adds the totals, and by app the Applications' totals.`,
		Example: `  argosy report deployments --by app
  argosy report deployments --by app --app argocd/guestbook
  argosy report deployments --by cluster --bucket week --from 2026-01-01T00:00:00Z
  argosy report deployments --by label --label team -o csv > deployments.csv`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output, reportFormats...); err != nil {
				return err
			}
			if err := opts.parse(by, bucket, from, to); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reportDeploymentsRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output, reportFormats...)
	apicmd.AddFlags(cmd, &opts.API)
	f := cmd.Flags()
	f.StringVar(&by, "by", "", "group by: "+strings.Join(read.Groupings, "|")+" (required)")
	f.StringVar(&opts.Label, "label", "", "the label key to group by, with --by label")
	f.StringVar(&opts.App, "app", "", "with --by app, list one Application's clusters: NAMESPACE/NAME")
	f.StringVar(&bucket, "bucket", string(argosyreport.Day), "bucket of time: "+strings.Join(read.Buckets, "|"))
	f.StringVar(&from, "from", "", "only deployments that finished at or after this RFC 3339 time (default: 30 days before --to)")
	f.StringVar(&to, "to", "", "only deployments that finished before this RFC 3339 time (default: now)")
	for flag, values := range map[string][]string{"by": read.Groupings, "bucket": read.Buckets} {
		if err := cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
			cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("%s flag completion: %w", flag, err) }
		}
	}
	return cmd
}

// parseSpan parses --from and --to, either of which may be empty; --from
// must be before --to.
func parseSpan(from, to string) (time.Time, time.Time, error) {
	f, err := apicmd.ParseTime("from", from)
	if err != nil {
		return f, time.Time{}, err
	}
	t, err := apicmd.ParseTime("to", to)
	if err != nil {
		return f, t, err
	}
	if !f.IsZero() && !t.IsZero() && !f.Before(t) {
		return f, t, &cmdkit.FlagError{Err: errors.New("--from must be before --to")}
	}
	return f, t, nil
}

func (o *ReportDeploymentsOptions) parse(by, bucket, from, to string) error {
	var err error
	if o.From, o.To, err = parseSpan(from, to); err != nil {
		return err
	}
	o.By, o.Bucket = argosyreport.GroupBy(by), argosyreport.Bucket(bucket)
	switch {
	case by == "":
		return &cmdkit.FlagError{Err: fmt.Errorf("--by is required: one of %s", strings.Join(read.Groupings, ", "))}
	case !slices.Contains(read.Groupings, by):
		return &cmdkit.FlagError{Err: fmt.Errorf("--by %q: want one of %s", by, strings.Join(read.Groupings, ", "))}
	case !slices.Contains(read.Buckets, bucket):
		return &cmdkit.FlagError{Err: fmt.Errorf("--bucket %q: want one of %s", bucket, strings.Join(read.Buckets, ", "))}
	case o.By == argosyreport.ByLabel && o.Label == "":
		return &cmdkit.FlagError{Err: errors.New("--by label needs --label KEY")}
	case o.By != argosyreport.ByLabel && o.Label != "":
		return &cmdkit.FlagError{Err: errors.New("--label goes with --by label only")}
	case o.App == "":
		return nil
	case o.By != argosyreport.ByApp:
		return &cmdkit.FlagError{Err: errors.New("--app goes with --by app only")}
	}
	if _, _, err := read.ParseApp(o.App); err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("--app %w", err)}
	}
	return nil
}

func reportDeploymentsRun(ctx context.Context, opts *ReportDeploymentsOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	r, err := c.DeploymentReport(ctx, opts.ReportParams)
	if err != nil {
		return opts.API.Explain(err)
	}
	gaps := map[string]int{}
	for _, g := range r.Gaps {
		gaps[g.Group] = g.Gaps
	}
	switch opts.Output {
	case "csv":
		err = cmdkit.PrintCSV(opts.IO.Out, argosyreport.CSVHeader, r.CSV())
	case "table":
		err = printTable(opts.IO.Out, r, gaps)
	default:
		err = cmdkit.PrintOut(opts.IO.Out, opts.Output, r, nil, nil)
	}
	if err != nil {
		return err
	}
	return gapNote(opts.IO, r)
}

// printTable writes the report's table: by app, one row per Application
// (or, for one Application, per cluster); otherwise per group and bucket;
// then the span the records cover.
func printTable(w io.Writer, r *argosyreport.Report, gaps map[string]int) error {
	var err error
	switch {
	case r.By == argosyreport.ByApp && r.App != "":
		err = cmdkit.PrintOut(w, "table", r, totalsHeader("CLUSTER"), totalsTable(r, r.Totals, true))
	case r.By == argosyreport.ByApp:
		err = cmdkit.PrintOut(w, "table", r, totalsHeader("APPLICATION"), totalsTable(r, r.Applications, false))
	default:
		header := []string{strings.ToUpper(string(r.By)), strings.ToUpper(string(r.Bucket)), "DEPLOYS", "PER DAY",
			"FAILURES", "FAILURE RATE", "UNCHANGED", "DEGRADED", "RESTORE", "UNRESTORED", "LEAD TIME", "GAPS"}
		if r.By == argosyreport.ByLabel {
			header[0] = "LABEL " + r.Label
		}
		err = cmdkit.PrintOut(w, "table", r, header, reportTable(r, gaps))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, r.Summary())
	return err
}

func reportTable(r *argosyreport.Report, gaps map[string]int) [][]string {
	rows := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		rows = append(rows, []string{row.Group, row.Start.UTC().Format(time.DateOnly), strconv.Itoa(row.Deployments),
			argosyreport.Frequency(row.Deployments, row.PerDay, r.Covered(row.Start, row.End)), strconv.Itoa(row.Failures),
			strconv.FormatFloat(row.ChangeFailureRate*100, 'f', 0, 64) + "%", strconv.Itoa(row.Unchanged), strconv.Itoa(row.Degraded), median(row.TimeToRestore),
			strconv.Itoa(row.Unrestored), median(row.LeadTime), count(gaps[row.Group])})
	}
	return rows
}

// totalsHeader is the header of totalsTable; a table of one
// Application's clusters has no CLUSTERS column.
func totalsHeader(first string) []string {
	h := []string{first, "CLUSTERS", "DEPLOYS", "PER DAY", "FAILURES", "FAILURE RATE", "UNCHANGED", "DEGRADED",
		"RESTORE", "UNRESTORED", "LEAD TIME", "GAPS"}
	if first == "CLUSTER" {
		return slices.Delete(h, 1, 2)
	}
	return h
}

// totalsTable writes totals over the span the report covers; perCluster
// names each by its cluster, from its group "cluster/namespace/name".
func totalsTable(r *argosyreport.Report, totals []argosyreport.Total, perCluster bool) [][]string {
	span := r.Covered(r.From, r.To)
	rows := make([][]string, 0, len(totals))
	for _, t := range totals {
		row := []string{t.Group, strconv.Itoa(t.Clusters)}
		if perCluster {
			cluster, _, _ := strings.Cut(t.Group, "/")
			row = []string{cluster}
		}
		rows = append(rows, append(row, strconv.Itoa(t.Deployments),
			argosyreport.Frequency(t.Deployments, t.PerDay, span), strconv.Itoa(t.Failures),
			strconv.FormatFloat(t.ChangeFailureRate*100, 'f', 0, 64)+"%", strconv.Itoa(t.Unchanged), strconv.Itoa(t.Degraded),
			median(t.TimeToRestore), strconv.Itoa(t.Unrestored), median(t.LeadTime), count(t.Gaps)))
	}
	return rows
}

// gapNote tells on stderr which groups have deployment gaps, so the numbers
// of a group that shows no row are not taken as complete either.
func gapNote(io cmdkit.IOStreams, r *argosyreport.Report) error {
	if len(r.Gaps) == 0 {
		return nil
	}
	var groups []string
	for _, g := range r.Gaps {
		groups = append(groups, fmt.Sprintf("%s (%d)", g.Group, g.Gaps))
	}
	_, err := fmt.Fprintf(io.Err, "Deployment gaps may hide deployments of: %s; their numbers may be too low.\n",
		strings.Join(groups, ", "))
	return err
}

// median formats a summary's median to the second, without trailing zero
// units (2m, 1h30m, 45s); "-" when there is none.
func median(d *argosyreport.Durations) string {
	if d == nil {
		return "-"
	}
	return short(d.Median)
}

// short writes d to the second, without trailing zero units: 23h, 4m30s.
func short(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func count(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
