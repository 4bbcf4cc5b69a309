package report

import (
	"strconv"
	"time"
)

// CSVHeader names the columns of CSV's rows.
var CSVHeader = []string{"group", "start", "end", "deployments", "deployments_per_day", "failures",
	"change_failure_rate", "time_to_restore_count", "time_to_restore_median_seconds", "time_to_restore_p90_seconds",
	"time_to_restore_mean_seconds", "unrestored", "lead_time_count", "lead_time_median_seconds", "lead_time_p90_seconds",
	"lead_time_mean_seconds", "lead_time_unknown", "gaps", "unchanged", "degraded"}

// CSV returns the report's rows as CSV fields under CSVHeader: one line
// per row, with its group's gap count. `argosy report -o csv` and the
// dashboard's download write the same.
func (r *Report) CSV() [][]string {
	gaps := map[string]int{}
	for _, g := range r.Gaps {
		gaps[g.Group] = g.Gaps
	}
	rows := make([][]string, 0, len(r.Rows))
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	durations := func(d *Durations) []string {
		if d == nil {
			return []string{"0", "", "", ""}
		}
		return []string{strconv.Itoa(d.Count), num(d.Median.Seconds()), num(d.P90.Seconds()), num(d.Mean.Seconds())}
	}
	for _, row := range r.Rows {
		line := []string{row.Group, row.Start.UTC().Format(time.RFC3339), row.End.UTC().Format(time.RFC3339),
			strconv.Itoa(row.Deployments), num(row.PerDay), strconv.Itoa(row.Failures), num(row.ChangeFailureRate)}
		line = append(line, durations(row.TimeToRestore)...)
		line = append(line, strconv.Itoa(row.Unrestored))
		line = append(line, durations(row.LeadTime)...)
		line = append(line, strconv.Itoa(row.LeadTimeUnknown), strconv.Itoa(gaps[row.Group]), strconv.Itoa(row.Unchanged), strconv.Itoa(row.Degraded))
		rows = append(rows, line)
	}
	return rows
}
