package report

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
	argosyreport "github.com/argosyproj/argosy/projector/report"
)

// ReportRolloutsOptions are the flags of `argosy report rollouts`.
type ReportRolloutsOptions struct {
	IO     cmdkit.IOStreams
	API    apicmd.Options
	Output string
	read.RolloutParams
}

// NewCmdReportRollouts returns `argosy report rollouts`.
func NewCmdReportRollouts(io cmdkit.IOStreams, runF func(context.Context, *ReportRolloutsOptions) error) *cobra.Command {
	opts := &ReportRolloutsOptions{IO: io}
	var placement, from, to string
	cmd := &cobra.Command{
		Use:   "rollouts",
		Short: "Report how each placement change reached the fleet",
		Long: `Report, newest first, each placement change (a placement and its generation)
the hub wrote to clusters between --from and --to (by default, the 30 days
before now), and how far it got across the fleet. docs/projector.md
("Rollouts") defines each column:
  TARGETED     the clusters the change was written to
  CONVERGED    those that recorded a successful sync at the change's
               generation or later; FAILED, those whose last sync since failed;
               PENDING, the rest
  STATE        Done when every targeted cluster converged
  DONE IN      from the first write to the last cluster's convergence
  SPREAD       from the first cluster's convergence to the last one's
  MEDIAN, P90  per cluster, from the change reaching it to its convergence

With --placement, the clusters of each of its rollouts follow.`,
		Example: `  argosy report rollouts
  argosy report rollouts --placement argocd/guestbook
  argosy report rollouts --from 2026-11-01T00:00:00Z -o csv > rollouts.csv`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output, reportFormats...); err != nil {
				return err
			}
			if err := opts.parse(placement, from, to); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reportRolloutsRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output, reportFormats...)
	apicmd.AddFlags(cmd, &opts.API)
	f := cmd.Flags()
	f.StringVar(&placement, "placement", "", "only this placement's rollouts, as NAMESPACE/NAME, with their clusters")
	f.StringVar(&from, "from", "", "only changes written at or after this RFC 3339 time (default: 30 days before --to)")
	f.StringVar(&to, "to", "", "only changes written before this RFC 3339 time (default: now)")
	return cmd
}

func (o *ReportRolloutsOptions) parse(placement, from, to string) error {
	var err error
	if o.From, o.To, err = parseSpan(from, to); err != nil {
		return err
	}
	if placement != "" {
		ns, name, ok := strings.Cut(placement, "/")
		if !ok || ns == "" || name == "" {
			return &cmdkit.FlagError{Err: fmt.Errorf("--placement %q: want NAMESPACE/NAME", placement)}
		}
		o.Namespace, o.Placement = ns, name
	}
	return nil
}

// rolloutHeader names the columns of the rollouts' table and CSV.
var rolloutHeader = []string{"PLACEMENT", "GEN", "STARTED", "TARGETED", "CONVERGED", "FAILED", "PENDING", "STATE",
	"DONE IN", "SPREAD", "MEDIAN", "P90"}

func reportRolloutsRun(ctx context.Context, opts *ReportRolloutsOptions) error {
	c, err := opts.API.Client()
	if err != nil {
		return err
	}
	r, err := c.Rollouts(ctx, opts.RolloutParams)
	if err != nil {
		return opts.API.Explain(err)
	}
	switch opts.Output {
	case "csv":
		header := make([]string, len(rolloutHeader))
		for i, h := range rolloutHeader {
			header[i] = strings.ReplaceAll(strings.ToLower(h), " ", "_")
		}
		return cmdkit.PrintCSV(opts.IO.Out, header, rolloutRows(r.Rollouts, rfc3339, seconds, ""))
	case "table":
		if err := cmdkit.PrintOut(opts.IO.Out, opts.Output, r, rolloutHeader, rolloutRows(r.Rollouts, minute, short, "-")); err != nil {
			return err
		}
		return rolloutClusters(opts.IO.Out, r.Rollouts)
	default:
		return cmdkit.PrintOut(opts.IO.Out, opts.Output, r, nil, nil)
	}
}

// rolloutRows are the rollouts' rows, with times and durations written by
// at and dur, and none for a duration not known yet.
func rolloutRows(rs []argosyreport.Rollout, at func(time.Time) string, dur func(time.Duration) string, none string) [][]string {
	rows := make([][]string, 0, len(rs))
	for _, r := range rs {
		done, spread, median, p90 := none, none, none, none
		if r.Converged > 0 {
			spread = dur(time.Duration(r.SpreadSeconds * float64(time.Second)))
		}
		if r.DurationSeconds != nil {
			done = dur(time.Duration(*r.DurationSeconds * float64(time.Second)))
		}
		if r.Times != nil {
			median, p90 = dur(r.Times.Median), dur(r.Times.P90)
		}
		rows = append(rows, []string{r.Namespace + "/" + r.Placement, strconv.FormatInt(r.Generation, 10), at(r.Started),
			strconv.Itoa(r.Targeted), strconv.Itoa(r.Converged), strconv.Itoa(r.Failed), strconv.Itoa(r.Pending),
			rolloutState(r), done, spread, median, p90})
	}
	return rows
}

// rolloutState is Done, Failing or In progress, and whether a newer change
// superseded it.
func rolloutState(r argosyreport.Rollout) string {
	s := "In progress"
	switch {
	case r.Done != nil:
		s = "Done"
	case r.Failed > 0:
		s = "Failing"
	}
	if r.Superseded {
		s += " (superseded)"
	}
	return s
}

// rolloutClusters prints, after the table, the clusters of each rollout
// that lists them (a placement was asked for).
func rolloutClusters(w io.Writer, rs []argosyreport.Rollout) error {
	var rows [][]string
	for _, r := range rs {
		for _, c := range r.Clusters {
			state, after := "Pending", "-"
			switch {
			case c.Converged != nil:
				state, after = "Converged", short(max(c.Converged.Sub(c.At), 0))
			case c.Failed:
				state = "Failed"
			}
			rows = append(rows, []string{strconv.FormatInt(r.Generation, 10), c.Cluster, minute(c.At), state, after})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return cmdkit.PrintOut(w, "table", nil, []string{"GEN", "CLUSTER", "WRITTEN", "STATE", "AFTER"}, rows)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func minute(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
