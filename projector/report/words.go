package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Covered returns how much of [start, end) the records cover. A report
// without the covered span (from a server older than it) covers From to To.
func (r *Report) Covered(start, end time.Time) time.Duration {
	from, to := r.CoveredFrom, r.CoveredTo
	if from.IsZero() && to.IsZero() {
		from, to = r.From, r.To
	}
	return Overlap(start, end, from, to)
}

// Frequency writes n deployments over span as `argosy report` and the
// dashboard show it: per day to two decimals over a day or more ("0.63"),
// and as a count with its span under a day ("3 in 5h 12m"), where a rate
// per day would be made up.
func Frequency(n int, perDay float64, span time.Duration) string {
	if span < day {
		return strconv.Itoa(n) + " in " + Span(span)
	}
	return strconv.FormatFloat(perDay, 'f', 2, 64)
}

// Span writes d coarsely, to the minute under a day and to the hour
// above: "12m", "5h 12m", "3d 4h", "30d".
func Span(d time.Duration) string {
	d = d.Round(time.Minute)
	days, hours, minutes := int(d/day), int(d%day/time.Hour), int(d%time.Hour/time.Minute)
	var parts []string
	add := func(n int, unit string) {
		if n > 0 {
			parts = append(parts, strconv.Itoa(n)+unit)
		}
	}
	if days > 0 {
		add(days, "d")
		add(hours, "h")
	} else {
		add(hours, "h")
		add(minutes, "m")
	}
	if len(parts) == 0 {
		return "0m"
	}
	return strings.Join(parts, " ")
}

// Summary says in one sentence what the report's records cover and how
// many deployments they hold: "5 deployments over 8d (2026-02-22 12:00 to
// 2026-03-02 12:00 UTC): 0.62 per day."; under a day, without a rate.
func (r *Report) Summary() string {
	n := 0
	for _, t := range r.Totals {
		n += t.Deployments
	}
	from, to := r.CoveredFrom, r.CoveredTo
	if from.IsZero() && to.IsZero() {
		from, to = r.From, r.To
	}
	const stamp = "2006-01-02 15:04"
	if n == 0 {
		return fmt.Sprintf("No deployment from %s to %s UTC.", r.From.UTC().Format(stamp), r.To.UTC().Format(stamp))
	}
	span := to.Sub(from)
	s := fmt.Sprintf("%d deployment%s over %s (%s to %s UTC)", n, plural(n), Span(span),
		from.UTC().Format(stamp), to.UTC().Format(stamp))
	if span < day {
		return s + "."
	}
	return s + ": " + Frequency(n, perDay(n, span), span) + " per day."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
