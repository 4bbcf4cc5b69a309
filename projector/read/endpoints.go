package read

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/report"
)

// sortParams are the values of a fleet listing's sort: each of Sorts,
// and each after a "-".
func sortParams() []string {
	out := slices.Clone(Sorts)
	for _, s := range Sorts {
		out = append(out, "-"+s)
	}
	return out
}

// clusters answers the fleet listing. Without parameters it is every
// cluster, as items alone. With any, it is those a label selector, a state
// and a name search keep, sorted, on one page unless page or perPage asks
// for pages, with the total and the matches counted by state.
func (h *Handler) clusters(r *http.Request) (any, error) {
	p, err := parseParams(r, "selector", "state", "q", "sort", "page", "perPage")
	if err != nil {
		return nil, err
	}
	req := FleetRequest{Selector: p.str("selector"), State: p.oneOf("state", "", States), Search: p.str("q"), Sort: p.oneOf("sort", "", sortParams()),
		Page: p.integer("page", 1, math.MaxInt32), PerPage: p.integer("perPage", DefaultPerPage, MaxPerPage)}
	if err := p.err(); err != nil {
		return nil, err
	}
	if _, paged := p.values["page"]; !paged {
		if _, paged = p.values["perPage"]; !paged {
			req.PerPage = -1
		}
	}
	page, err := ListFleet(r.Context(), h.q, req, h.now(), h.heartbeat)
	if err != nil || len(p.values) > 0 {
		return page, err
	}
	return List[Cluster]{Items: page.Items}, nil
}

func (h *Handler) cluster(r *http.Request) (any, error) {
	if _, err := parseParams(r); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	c, ok, err := h.q.Cluster(r.Context(), name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading cluster %q: %w", name, err)
	case !ok:
		return nil, notFound("cluster %q not found", name)
	}
	return h.clusterOf(c), nil
}

func (h *Handler) clusterApps(r *http.Request) (any, error) {
	p, err := parseParams(r, "namespace", "name")
	if err != nil {
		return nil, err
	}
	cluster := r.PathValue("cluster")
	c, ok, err := h.q.Cluster(r.Context(), cluster)
	if err != nil {
		return nil, fmt.Errorf("reading cluster %q: %w", cluster, err)
	} else if !ok {
		return nil, notFound("cluster %q not found", cluster)
	}
	f := projector.AppFilter{Cluster: cluster, Namespace: p.str("namespace"), Name: p.str("name")}
	return h.listAppsOf(r, f, []projector.ClusterSummary{c.Summary()})
}

func (h *Handler) apps(r *http.Request) (any, error) {
	p, err := parseParams(r, "cluster", "namespace", "name")
	if err != nil {
		return nil, err
	}
	return h.listApps(r, projector.AppFilter{Cluster: p.str("cluster"), Namespace: p.str("namespace"), Name: p.str("name")})
}

// listApps lists the Applications f selects with their clusters'
// freshness: from that one cluster's row when f names one, which costs
// one row, not one per cluster of the fleet.
func (h *Handler) listApps(r *http.Request, f projector.AppFilter) (any, error) {
	if f.Cluster == "" {
		return h.listAppsOf(r, f, nil)
	}
	c, ok, err := h.q.Cluster(r.Context(), f.Cluster)
	if err != nil {
		return nil, fmt.Errorf("reading cluster %q: %w", f.Cluster, err)
	}
	clusters := []projector.ClusterSummary{}
	if ok {
		clusters = append(clusters, c.Summary())
	}
	return h.listAppsOf(r, f, clusters)
}

// listAppsOf lists the Applications f selects, their freshness judged
// from clusters, or from every cluster's summary when clusters is nil.
func (h *Handler) listAppsOf(r *http.Request, f projector.AppFilter, clusters []projector.ClusterSummary) (any, error) {
	rows, err := h.q.Apps(r.Context(), f)
	if err != nil {
		return nil, fmt.Errorf("listing applications: %w", err)
	}
	if clusters == nil {
		if clusters, err = h.q.ClusterSummaries(r.Context()); err != nil {
			return nil, fmt.Errorf("listing clusters: %w", err)
		}
	}
	apps := h.withFreshness(rows, clusters)
	boundApps(apps)
	return List[App]{Items: apps}, nil
}

func (h *Handler) audit(r *http.Request) (any, error) {
	p, err := parseParams(r, "cluster", "namespace", "app", "actor", "from", "to", "limit", "changes")
	if err != nil {
		return nil, err
	}
	f := projector.AuditFilter{Cluster: p.str("cluster"), Namespace: p.str("namespace"), Name: p.str("app"),
		Actor: p.str("actor"), Limit: p.integer("limit", DefaultAuditLimit, MaxAuditLimit),
		Changes: p.oneOf("changes", "false", booleans) == "true"}
	f.From, f.To = p.interval()
	if err := p.err(); err != nil {
		return nil, err
	}
	rows, err := h.q.Audit(r.Context(), f)
	if err != nil {
		return nil, fmt.Errorf("listing audit entries: %w", err)
	}
	b := newBudget()
	for i := range rows {
		rows[i].Before, rows[i].After = b.bound(rows[i].Before), b.bound(rows[i].After)
	}
	return List[projector.AuditRow]{Items: nonNil(rows)}, nil
}

// booleans are the values of a boolean parameter.
var booleans = []string{"true", "false"}

// timeline answers the audit timeline: one entry per action, reads left
// out unless asked for.
func (h *Handler) timeline(r *http.Request) (any, error) {
	p, err := parseParams(r, "cluster", "namespace", "app", "actor", "from", "to", "limit", "reads")
	if err != nil {
		return nil, err
	}
	f := TimelineFilter{AuditFilter: projector.AuditFilter{Cluster: p.str("cluster"), Namespace: p.str("namespace"),
		Name: p.str("app"), Actor: p.str("actor"), Limit: p.integer("limit", DefaultTimelineLimit, MaxTimelineLimit)},
		Reads: p.oneOf("reads", "false", booleans) == "true"}
	f.From, f.To = p.interval()
	if err := p.err(); err != nil {
		return nil, err
	}
	actions, err := Timeline(r.Context(), h.q, f)
	if err != nil {
		return nil, err
	}
	b := newBudget()
	for i := range actions {
		actions[i].Before, actions[i].After = b.bound(actions[i].Before), b.bound(actions[i].After)
		for j := range actions[i].Entries {
			e := &actions[i].Entries[j]
			e.After = b.bound(e.After)
		}
	}
	return List[Action]{Items: nonNil(actions)}, nil
}

func (h *Handler) deployments(r *http.Request) (any, error) {
	p, err := parseParams(r, "cluster", "project", "namespace", "app", "from", "to")
	if err != nil {
		return nil, err
	}
	f := projector.DeploymentFilter{Cluster: p.str("cluster"), Project: p.str("project"),
		Namespace: p.str("namespace"), Name: p.str("app")}
	f.From, f.To = p.interval()
	if err := p.err(); err != nil {
		return nil, err
	}
	ds, err := h.q.Deployments(r.Context(), f)
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	gaps, err := h.q.Gaps(r.Context(), f)
	if err != nil {
		return nil, fmt.Errorf("listing deployment gaps: %w", err)
	}
	return DeploymentList{Items: nonNil(ds), Gaps: nonNil(gaps)}, nil
}

func (h *Handler) report(r *http.Request) (any, error) {
	p, err := parseParams(r, "by", "label", "bucket", "from", "to", "app")
	if err != nil {
		return nil, err
	}
	p.required("by")
	req := report.Request{By: report.GroupBy(p.oneOf("by", "", Groupings)), Label: p.str("label"),
		Bucket: report.Bucket(p.oneOf("bucket", string(report.Day), Buckets))}
	req.From, req.To = p.interval()
	if err := p.err(); err != nil {
		return nil, err
	}
	switch {
	case req.By == report.ByLabel && req.Label == "":
		return nil, badRequest("parameter \"label\" is required with by=label: it names the label key to group by")
	case req.By != report.ByLabel && req.Label != "":
		return nil, badRequest("parameter \"label\" is only taken with by=label")
	}
	if app, ok := p.values["app"]; ok {
		if req.Namespace, req.Name, err = ParseApp(app); err != nil {
			return nil, badRequest("parameter \"app\" %s", err.Error())
		}
		if req.By != report.ByApp {
			return nil, badRequest("parameter \"app\" is only taken with by=app")
		}
	}
	if req.From, req.To, err = h.reportRange(req.From, req.To); err != nil {
		return nil, err
	}
	req.Now = h.now().UTC()
	rep, err := DeploymentReport(r.Context(), h.q, h.reporter, req)
	switch {
	case errors.Is(err, report.ErrInvalidRequest):
		return nil, badRequest("%s", err.Error())
	case errors.Is(err, report.ErrTooMany):
		return nil, badRequest("%s: ask for a shorter range", err.Error())
	case err != nil:
		return nil, err
	}
	return rep, nil
}

func (h *Handler) rollouts(r *http.Request) (any, error) {
	p, err := parseParams(r, "placement", "from", "to")
	if err != nil {
		return nil, err
	}
	var rp RolloutParams
	if name, ok := p.values["placement"]; ok { // given empty, it is refused, not taken as absent
		ns, n, ok := strings.Cut(name, "/")
		if !ok || ns == "" || n == "" {
			return nil, badRequest("parameter \"placement\" %q: want namespace/name", name)
		}
		rp.Namespace, rp.Placement = ns, n
	}
	rp.From, rp.To = p.interval()
	if err := p.err(); err != nil {
		return nil, err
	}
	if rp.From, rp.To, err = h.reportRange(rp.From, rp.To); err != nil {
		return nil, err
	}
	return Rollouts(r.Context(), h.q, rp)
}

// reportRange fills in a report's default range: to now, from
// DefaultReportRange before to; from must be before to.
func (h *Handler) reportRange(from, to time.Time) (time.Time, time.Time, error) {
	if to.IsZero() {
		to = h.now().UTC()
	}
	if from.IsZero() {
		from = to.Add(-DefaultReportRange)
	}
	if !from.Before(to) {
		return from, to, badRequest("parameter \"from\" (%s) must be before \"to\" (%s)",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	return from, to, nil
}

// DeploymentReport computes req from q's deployment records and gaps with
// rep (nil: report.Deployments). req's From and To must be set.
func DeploymentReport(ctx context.Context, q projector.Deliveries, rep Reporter, req report.Request) (report.Report, error) {
	// Records after To tell when a failure in range was restored.
	recs, err := q.Deployments(ctx, projector.DeploymentFilter{From: req.From, Namespace: req.Namespace, Name: req.Name})
	if err != nil {
		return report.Report{}, fmt.Errorf("listing deployments: %w", err)
	}
	return deploymentReport(ctx, q, rep, req, recs)
}

// deploymentReport computes req from recs, the deployment records that
// finished at or after req.From, and q's gaps and health changes.
func deploymentReport(ctx context.Context, q projector.Deliveries, rep Reporter, req report.Request, recs []projector.Deployment) (report.Report, error) {
	if rep == nil {
		rep = ReporterFunc(reportDeployments)
	}
	var err error
	if req.Since, err = recordsSince(ctx, q, req, recs); err != nil {
		return report.Report{}, err
	}
	if req.Gaps, err = q.Gaps(ctx, projector.DeploymentFilter{}); err != nil {
		return report.Report{}, fmt.Errorf("listing deployment gaps: %w", err)
	}
	app := projector.DeploymentFilter{From: req.From, Namespace: req.Namespace, Name: req.Name}
	if req.Health, err = q.HealthChanges(ctx, app); err != nil {
		return report.Report{}, fmt.Errorf("listing health changes: %w", err)
	}
	out, err := rep.DeploymentReport(ctx, recs, req)
	if err != nil {
		return report.Report{}, fmt.Errorf("computing the deployment report: %w", err)
	}
	out.Rows, out.Totals = nonNil(out.Rows), nonNil(out.Totals)
	return out, nil
}

// recordsSince is when the records of req begin, for its Since: zero if
// one finished before req.From, else the first of recs (those from
// req.From on, by finish time), else req.To.
func recordsSince(ctx context.Context, q projector.Deliveries, req report.Request, recs []projector.Deployment) (time.Time, error) {
	before, err := q.Deployments(ctx, projector.DeploymentFilter{To: req.From, Last: 1, Namespace: req.Namespace, Name: req.Name})
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("looking for deployments before the report: %w", err)
	case len(before) > 0:
		return time.Time{}, nil
	case len(recs) > 0:
		return recs[0].FinishedAt, nil
	}
	return req.To, nil
}

// ParseApp parses an Application's fleet-wide name, "namespace/name".
func ParseApp(s string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(s, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("%q: want namespace/name", s)
	}
	return ns, n, nil
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
