package web

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/report"
)

// minChartSpan is the least span of records, and minChartPoints the
// fewest buckets with a record, that the reports page draws a chart of;
// with less it says so rather than draw an empty grid.
const (
	minChartSpan   = 48 * time.Hour
	minChartPoints = 2
)

// reportData is the reports page's.
type reportData struct {
	Report *report.Report
	// Rollouts are the placement changes written in the report's range.
	Rollouts []report.Rollout
	Query    url.Values
	// Chart is the chart's data as JSON: buckets, and per series values;
	// ChartNote, when not empty, says why there is no chart instead.
	Chart     template.JS
	ChartNote string
	By        []string
	// Totals are a page of the report's totals: by app, its Applications,
	// or, for one Application (Report.App), its totals per cluster;
	// otherwise none. Rows are, for the other groupings, a page of the
	// report's rows (by group, then bucket). Page and Pages count the
	// pages of either.
	Totals      []report.Total
	Rows        []report.Row
	Page, Pages int
	// Span is how long the records cover, which the totals' rates divide
	// by.
	Span time.Duration
}

func (h *Handler) reportRequest(r *http.Request) (report.Request, url.Values, error) {
	q := r.URL.Query()
	now := h.now().UTC()
	req := report.Request{By: report.GroupBy(cmp.Or(q.Get("by"), "app")), Label: q.Get("label"),
		Bucket: report.Bucket(cmp.Or(q.Get("bucket"), "day")), To: now, Now: now}
	days, err := intParam(r, "days", 30, 366)
	if err != nil {
		return req, q, err
	}
	req.From = req.To.Add(-time.Duration(days) * 24 * time.Hour)
	if app := q.Get("app"); app != "" {
		if req.Namespace, req.Name, err = read.ParseApp(app); err != nil {
			return req, q, badRequest(fmt.Errorf("app %w", err))
		}
	}
	if err := req.Validate(); err != nil {
		return req, q, badRequest(err)
	}
	return req, q, nil
}

func (h *Handler) reports(r *http.Request) (string, any, error) {
	req, q, err := h.reportRequest(r)
	if err != nil {
		return "", nil, err
	}
	page, err := intParam(r, "page", 1, math.MaxInt)
	if err != nil {
		return "", nil, err
	}
	per, err := intParam(r, "per", read.DefaultPerPage, read.MaxPerPage)
	if err != nil {
		return "", nil, err
	}
	rep, ro, err := read.ReportWithRollouts(r.Context(), h.q, req)
	if err != nil {
		return "", nil, err
	}
	d := reportData{Report: &rep, Rollouts: ro.Rollouts, Query: q, By: read.Groupings,
		Span: rep.CoveredTo.Sub(rep.CoveredFrom)}
	if d.Chart, d.ChartNote, err = chartData(&rep); err != nil {
		return "", nil, err
	}
	if rep.By == report.ByApp {
		totals := rep.Applications
		if rep.App != "" {
			totals = rep.Totals
		}
		d.Totals, d.Page, d.Pages = pageOf(totals, page, per)
	} else {
		d.Rows, d.Page, d.Pages = pageOf(rep.Rows, page, per)
	}
	return "reports", d, nil
}

// pageOf returns page (from 1, past the last taking the last) of items
// per page, the page and the number of pages, 1 at least.
func pageOf[T any](items []T, page, per int) ([]T, int, int) {
	pages := max((len(items)+per-1)/per, 1)
	page = min(page, pages)
	start := (page - 1) * per
	return items[start:min(start+per, len(items))], page, pages
}

// chartData is the deployments per bucket of the report's groups, summed,
// with the failures beside them, for uPlot: {"x": [unix seconds],
// "deployments": [...], "failures": [...], "from": s, "to": s}, from the
// first bucket the records cover to the report's end. With
// records over less than minChartSpan or in fewer than minChartPoints
// buckets, it returns instead a note that says so.
func chartData(rep *report.Report) (template.JS, string, error) {
	idx := map[int64]int{}
	var xs []int64
	for _, row := range rep.Rows {
		t := row.Start.Unix()
		if _, ok := idx[t]; !ok {
			idx[t] = 0
			xs = append(xs, t)
		}
	}
	if len(xs) < minChartPoints || rep.CoveredTo.Sub(rep.CoveredFrom) < minChartSpan {
		return "", chartNote(rep), nil
	}
	slices.Sort(xs)
	for i, x := range xs {
		idx[x] = i
	}
	deps, fails := make([]int, len(xs)), make([]int, len(xs))
	for _, row := range rep.Rows {
		deps[idx[row.Start.Unix()]] += row.Deployments
		fails[idx[row.Start.Unix()]] += row.Failures
	}
	// The axis spans the records, not the days before the first of them.
	b, err := json.Marshal(map[string]any{"x": xs, "deployments": deps, "failures": fails,
		"from": min(xs[0], rep.CoveredFrom.Unix()), "to": rep.To.Unix()})
	return template.JS(b), "", err
}

// chartNote says why the report has no chart: "Too little data for a
// chart: 3 deployments since 2026-03-02 07:00 UTC (5h 12m).", or that
// there is no deployment in range.
func chartNote(rep *report.Report) string {
	n := 0
	for _, t := range rep.Totals {
		n += t.Deployments
	}
	if n == 0 {
		return rep.Summary()
	}
	noun := "deployments"
	if n == 1 {
		noun = "deployment"
	}
	return fmt.Sprintf("Too little data for a chart: %d %s since %s UTC (%s).", n, noun,
		rep.CoveredFrom.UTC().Format("2006-01-02 15:04"), report.Span(rep.CoveredTo.Sub(rep.CoveredFrom)))
}

func (h *Handler) reportDownload(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, _, err := h.reportRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep, err := read.DeploymentReport(r.Context(), h.q, nil, req)
		if err != nil {
			h.o.Log.ErrorContext(r.Context(), "dashboard report failed", "err", err)
			http.Error(w, "internal error: see the hub's log", http.StatusInternalServerError)
			return
		}
		name := fmt.Sprintf("deployments-by-%s-%s.%s", req.By, req.To.Format("2006-01-02"), format)
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		if format == "json" {
			w.Header().Set("Content-Type", "application/json")
			err = json.NewEncoder(w).Encode(rep)
		} else {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			err = writeReportCSV(w, rep)
		}
		if err != nil {
			h.o.Log.DebugContext(r.Context(), "writing a report download", "err", err)
		}
	}
}

func writeReportCSV(w io.Writer, rep report.Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(report.CSVHeader); err != nil {
		return err
	}
	if err := cw.WriteAll(rep.CSV()); err != nil {
		return err
	}
	return cw.Error()
}
