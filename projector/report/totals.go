package report

import (
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// day is the least span a rate divides by.
const day = 24 * time.Hour

// covered returns the span the records cover in [from, to): from the later
// of from and req.Since, to the earlier of to and req.Now, never ending
// before it starts.
func covered(req *Request, from, to time.Time) (time.Time, time.Time) {
	start, end := from, to
	if since := req.Since.UTC(); since.After(start) {
		start = minTime(since, to)
	}
	if now := req.Now.UTC(); !now.IsZero() && now.Before(end) {
		end = now
	}
	return start, maxTime(start, end)
}

// Overlap is the length of [start, end) that lies in [from, to), 0 if none.
func Overlap(start, end, from, to time.Time) time.Duration {
	return max(minTime(end, to).Sub(maxTime(start, from)), 0)
}

// perDay is n over span in days, and over one day at least: a part of a day
// is not extrapolated to a whole one.
func perDay(n int, span time.Duration) float64 {
	return float64(n) / (float64(max(span, day)) / float64(day))
}

// failureRate is failures / (deployments + failures), 0 when both are 0.
func failureRate(failures, deployments int) float64 {
	if n := deployments + failures; n > 0 {
		return float64(failures) / float64(n)
	}
	return 0
}

// oneApp keeps, when req names an Application, its records, gaps and
// health changes on every cluster; otherwise it returns them as they are.
func oneApp(req *Request, recs []projector.Deployment) ([]projector.Deployment, []projector.Gap, []projector.HealthChange) {
	if req.Name == "" {
		return recs, req.Gaps, req.Health
	}
	keep := func(ns, name string) bool { return ns == req.Namespace && name == req.Name }
	recs = slices.DeleteFunc(slices.Clone(recs), func(d projector.Deployment) bool { return !keep(d.Namespace, d.Name) })
	gaps := slices.DeleteFunc(slices.Clone(req.Gaps), func(g projector.Gap) bool { return !keep(g.Namespace, g.Name) })
	health := slices.DeleteFunc(slices.Clone(req.Health), func(h projector.HealthChange) bool { return !keep(h.Namespace, h.Name) })
	return recs, gaps, health
}

// totals returns each group's numbers over the whole range, and, grouping
// by app, each Application's summed over its clusters; the records cover
// [covFrom, covTo).
func (b *builder) totals(gaps []GapCount, covFrom, covTo time.Time) ([]Total, []Total) {
	gapsOf := make(map[string]int, len(gaps))
	for _, g := range gaps {
		gapsOf[g.Group] = g.Gaps
	}
	var groups []*total
	byGroup := map[string]*total{}
	for _, k := range b.keys() {
		t := byGroup[k.group]
		if t == nil {
			t = &total{group: k.group, clusters: b.clusters[k.group]}
			byGroup[k.group] = t
			groups = append(groups, t)
		}
		t.parts = append(t.parts, b.acc[k])
	}
	for _, t := range groups {
		t.sum = merge(t.parts)
	}
	span := covTo.Sub(covFrom)
	out := make([]Total, 0, len(groups))
	for _, t := range groups {
		out = append(out, t.total(span, gapsOf[t.group]))
	}
	if b.req.By != ByApp {
		return out, nil
	}
	return out, applications(groups, gaps, span)
}

// applications sums the totals of groups "cluster/namespace/name", in
// order, per "namespace/name"; gaps are per group too.
func applications(groups []*total, gaps []GapCount, span time.Duration) []Total {
	byApp := map[string]*total{}
	gapsOf := map[string]int{}
	name := func(group string) string {
		_, app, _ := strings.Cut(group, "/") // a cluster's name has no slash
		return app
	}
	for _, g := range gaps {
		gapsOf[name(g.Group)] += g.Gaps
	}
	var apps []*total
	for _, g := range groups {
		app := name(g.group)
		t := byApp[app]
		if t == nil {
			t = &total{group: app, clusters: map[string]struct{}{}}
			byApp[app] = t
			apps = append(apps, t)
		}
		for c := range g.clusters {
			t.clusters[c] = struct{}{}
		}
		t.parts = append(t.parts, &g.sum)
	}
	for _, t := range apps {
		t.sum = merge(t.parts)
	}
	out := make([]Total, 0, len(byApp))
	for app, t := range byApp {
		out = append(out, t.total(span, gapsOf[app]))
	}
	slices.SortFunc(out, func(a, b Total) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// total accumulates one group's rows (parts).
type total struct {
	group    string
	clusters map[string]struct{}
	parts    []*acc
	sum      acc
}

// merge sums parts, with their durations in slices of their own, sized
// once: a report's totals hold as many durations as its rows.
func merge(parts []*acc) acc {
	var sum acc
	nr, nl := 0, 0
	for _, p := range parts {
		nr, nl = nr+len(p.restores), nl+len(p.leads)
	}
	sum.restores, sum.leads = make([]time.Duration, 0, nr), make([]time.Duration, 0, nl)
	for _, p := range parts {
		sum.deployments += p.deployments
		sum.failures += p.failures
		sum.unrestored += p.unrestored
		sum.leadUnknown += p.leadUnknown
		sum.unchanged += p.unchanged
		sum.degraded += p.degraded
		sum.restores = append(sum.restores, p.restores...)
		sum.leads = append(sum.leads, p.leads...)
	}
	return sum
}

// total returns t's numbers; it sorts t's durations.
func (t *total) total(span time.Duration, gaps int) Total {
	a := &t.sum
	return Total{
		Group: t.group, Clusters: len(t.clusters),
		Deployments: a.deployments, Failures: a.failures, Unchanged: a.unchanged, Degraded: a.degraded,
		PerDay: perDay(a.deployments, span), ChangeFailureRate: failureRate(a.failures, a.deployments),
		TimeToRestore: summarize(a.restores), Unrestored: a.unrestored,
		LeadTime: summarize(a.leads), LeadTimeUnknown: a.leadUnknown,
		Gaps: gaps,
	}
}
