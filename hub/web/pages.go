package web

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/report"
	"github.com/argosyproj/argosy/schemas"
)

var readError = read.StatusOf

// fleetData is the fleet page's.
type fleetData struct {
	read.FleetPage
	Req    read.FleetRequest
	States []string
	// Query is the request's filters, for links that keep them.
	Query url.Values
}

// intParam reads a whole-number parameter from 1 to hi, def when absent.
func intParam(r *http.Request, name string, def, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case (err != nil || n < 1) && hi == math.MaxInt:
		return 0, badRequest(fmt.Errorf("%s %q: want a whole number from 1", name, v))
	case err != nil || n < 1 || n > hi:
		return 0, badRequest(fmt.Errorf("%s %q: want 1 to %d", name, v, hi))
	}
	return n, nil
}

func (h *Handler) fleet(r *http.Request) (string, any, error) {
	q := r.URL.Query()
	req := read.FleetRequest{Selector: q.Get("selector"), State: q.Get("state"), Search: q.Get("q"), Sort: q.Get("sort")}
	var err error
	if req.Page, err = intParam(r, "page", 1, math.MaxInt); err != nil {
		return "", nil, err
	}
	if req.PerPage, err = intParam(r, "per", read.DefaultPerPage, math.MaxInt); err != nil {
		return "", nil, err
	}
	p, err := read.ListFleet(r.Context(), h.q, req, h.now(), h.heartbeat)
	if err != nil {
		return "", nil, err
	}
	keep := url.Values{}
	for _, k := range []string{"selector", "state", "q", "sort", "per"} {
		if v := q.Get(k); v != "" {
			keep.Set(k, v)
		}
	}
	return "fleet", fleetData{FleetPage: p, Req: req, States: read.States, Query: keep}, nil
}

// clusterData is the cluster page's.
type clusterData struct {
	Cluster read.Cluster
	Apps    []read.App
}

func (h *Handler) cluster(r *http.Request) (string, any, error) {
	name := r.PathValue("name")
	c, ok, err := h.q.Cluster(r.Context(), name)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("no cluster %q", name)}
	}
	rows, err := h.q.Apps(r.Context(), projector.AppFilter{Cluster: name})
	if err != nil {
		return "", nil, err
	}
	now := h.now()
	return "cluster", clusterData{Cluster: read.ClusterOf(c, now, h.heartbeat),
		Apps: read.WithFreshness(rows, []projector.ClusterSummary{c.Summary()}, now, h.heartbeat)}, nil
}

// appData is the Application page's.
type appData struct {
	Namespace, Name string
	// Source is where its manifests come from, per the newest spec the hub
	// wants anywhere; Resources what it deploys, as ResourcesOf reported
	// them last.
	Source      *read.AppSource
	Resources   *schemas.ResourceSummary
	ResourcesOf string
	// Rows are the page's clusters, of those in State (all if empty).
	Rows []read.App
	// Converged counts the clusters that applied the generation the hub
	// wants and report it Synced and Healthy, of Placed; Stale counts the
	// clusters whose report is not current. Counts counts the clusters by
	// read.AppStates, and States lists them.
	Converged, Placed, Stale, NotConverged int
	Counts                                 map[string]int
	States                                 []string
	State                                  string
	// Total is how many clusters are in State; Page and Pages place this
	// page of them; Query keeps the filter for links.
	Total, Page, Pages int
	Query              url.Values
	Deployments        []projector.Deployment
	// Rollout is the newest change of the placement of the same name, if
	// a placement writes this Application, with its clusters.
	Rollout *report.Rollout
}

func (h *Handler) app(r *http.Request) (string, any, error) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	d, err := h.appRows(r, ns, name)
	if err != nil {
		return "", nil, err
	}
	deps, err := h.q.Deployments(r.Context(), projector.DeploymentFilter{Namespace: ns, Name: name, Last: 20})
	if err != nil {
		return "", nil, err
	}
	slices.Reverse(deps)
	d.Deployments = deps
	now := h.now()
	ro, err := read.Rollouts(r.Context(), h.q, read.RolloutParams{Namespace: ns, Placement: name,
		From: now.Add(-read.DefaultReportRange), To: now.Add(time.Second), Newest: true})
	if err != nil {
		return "", nil, err
	}
	if len(ro.Rollouts) > 0 {
		d.Rollout = &ro.Rollouts[0]
	}
	return "app", d, nil
}

// appRows is the Application page's summary and its page of clusters,
// of the state the request's state parameter names.
func (h *Handler) appRows(r *http.Request, ns, name string) (*appData, error) {
	state := r.URL.Query().Get("state")
	if err := read.CheckAppState(state); err != nil {
		return nil, err
	}
	page, err := intParam(r, "page", 1, math.MaxInt)
	if err != nil {
		return nil, err
	}
	rows, err := h.q.Apps(r.Context(), projector.AppFilter{Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("no Application %s/%s on any cluster", ns, name)}
	}
	clusters, err := h.q.ClusterSummaries(r.Context())
	if err != nil {
		return nil, err
	}
	d := &appData{Namespace: ns, Name: name, Counts: map[string]int{}, State: state, Query: url.Values{},
		States: append(append([]string{}, read.AppStates...), read.AppNotConverged)}
	if state != "" {
		d.Query.Set("state", state)
	}
	var kept []read.App
	var newest *projector.AppDesired
	var resourcesAt time.Time
	for _, a := range read.WithFreshness(rows, clusters, h.now(), h.heartbeat) {
		st := read.AppStateOf(a)
		if st != "" {
			d.Placed++
			d.Counts[st]++
			if newest == nil || a.Desired.UpdatedAt.After(newest.UpdatedAt) {
				newest = a.Desired
			}
		}
		if read.InAppState(st, state) {
			kept = append(kept, a)
		}
		if o := a.Observed; o != nil && o.Resources != nil && (d.Resources == nil || o.UpdatedAt.After(resourcesAt)) {
			d.Resources, d.ResourcesOf, resourcesAt = o.Resources, a.Cluster, o.UpdatedAt
		}
	}
	d.Converged, d.Stale = d.Counts[read.AppConverged], d.Counts[read.AppStale]
	d.NotConverged = d.Placed - d.Converged
	if newest != nil {
		d.Source = read.SourceOf(newest.Spec)
	}
	d.Total, d.Pages = len(kept), max((len(kept)+appPerPage-1)/appPerPage, 1)
	d.Page = min(page, d.Pages)
	d.Rows = kept[min((d.Page-1)*appPerPage, len(kept)):min(d.Page*appPerPage, len(kept))]
	return d, nil
}

// appPerPage is how many clusters a page of the Application page lists.
const appPerPage = 50

// auditData is the audit page's: the timeline's actions, or with
// ?group=none every entry (Rows).
type auditData struct {
	Actions []auditAction
	Rows    []auditRow
	Filter  url.Values
	Limit   int
	// Entries is true for ?group=none, Reads for ?reads=1.
	Entries, Reads bool
}

type auditRow struct {
	projector.AuditRow
	Diff *specChange
}

// auditAction is one action of the timeline, its newest change's diff
// shown once.
type auditAction struct {
	read.Action
	Diff *specChange
	// Cluster is the one cluster the action's changes are about, if one.
	Cluster string
	// Acks are the one cluster's results, shown as they are.
	Acks []projector.Ack
	// Shown are the entries listed, the first maxActionEntries; More
	// counts the others, which ?group=none lists.
	Shown []projector.AuditRow
	More  int
}

// maxActionEntries is how many of an action's entries the timeline lists:
// a placement change has one per cluster.
const maxActionEntries = 20

func (h *Handler) audit(r *http.Request) (string, any, error) {
	q := r.URL.Query()
	f := projector.AuditFilter{Cluster: q.Get("cluster"), Namespace: q.Get("namespace"), Name: q.Get("app"), Actor: q.Get("actor")}
	var err error
	if f.Limit, err = intParam(r, "limit", 50, math.MaxInt); err != nil {
		return "", nil, err
	}
	if s := q.Get("since"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return "", nil, badRequest(fmt.Errorf("since %q: want a duration such as 24h", s))
		}
		f.From = h.now().Add(-d)
	}
	out := auditData{Filter: q, Entries: q.Get("group") == "none", Reads: q.Get("reads") == "1"}
	f.Changes = !out.Reads
	if !out.Entries {
		f.Limit = min(f.Limit, read.MaxTimelineLimit)
		out.Limit = f.Limit
		actions, err := read.Timeline(r.Context(), h.q, read.TimelineFilter{AuditFilter: f, Reads: out.Reads})
		if err != nil {
			return "", nil, err
		}
		out.Actions = auditActions(actions)
		return "audit", out, nil
	}
	f.Limit = min(f.Limit, read.MaxAuditLimit)
	out.Limit = f.Limit
	rows, err := h.q.Audit(r.Context(), f)
	if err != nil {
		return "", nil, err
	}
	out.Rows = make([]auditRow, len(rows))
	left := maxPageDiff
	for i, a := range rows {
		d := specDiff(a.Before, a.After, left)
		if d != nil {
			left -= len(d.Lines)
		}
		out.Rows[i] = auditRow{AuditRow: a, Diff: d}
	}
	return "audit", out, nil
}

// auditActions are the page's actions: each with its diff, within the
// page's bound, and its one cluster's results when it has one.
func auditActions(actions []read.Action) []auditAction {
	out := make([]auditAction, len(actions))
	left := maxPageDiff
	for i, a := range actions {
		d := specDiff(a.Before, a.After, left)
		if d != nil {
			left -= len(d.Lines)
		}
		out[i] = auditAction{Action: a, Diff: d, Shown: a.Entries[:min(len(a.Entries), maxActionEntries)],
			More: max(len(a.Entries)-maxActionEntries, 0)}
		if a.Clusters != 1 {
			continue
		}
		for _, e := range a.Entries {
			if e.Kind != "api" && e.Cluster != "" {
				out[i].Cluster = e.Cluster
				out[i].Acks = append(out[i].Acks, e.Results...)
			}
		}
	}
	return out
}

func joinLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l[k]
	}
	return strings.Join(keys, ", ")
}

// verify checks every audit chain and answers a fragment for the audit
// page: the result of `argosy audit verify`.
func (h *Handler) verify(w http.ResponseWriter, r *http.Request) {
	v, err := read.VerifyChains(r.Context(), h.q, 0)
	if err != nil {
		h.o.Log.ErrorContext(r.Context(), "dashboard audit verify failed", "err", err)
		http.Error(w, "the check failed: see the hub's log", http.StatusInternalServerError)
		return
	}
	entries := int64(0)
	for _, p := range v.Partitions {
		entries += p.Entries
	}
	h.renderFragment(w, r, "verify", map[string]any{"V": v, "Entries": entries})
}
