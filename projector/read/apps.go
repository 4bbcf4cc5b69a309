package read

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// Where one cluster stands on the Application the hub wants there.
const (
	// AppConverged: it applied the wanted generation, and Argo CD reports
	// it Synced and Healthy.
	AppConverged = "Converged"
	// AppProgressing: applied, and not yet Synced and Healthy.
	AppProgressing = "Progressing"
	// AppFailed: its agent rejected the wanted generation, Argo CD's last
	// operation ended Failed or Error, or it is Degraded.
	AppFailed = "Failed"
	// AppPending: its agent has not applied the wanted generation yet.
	AppPending = "Pending"
	// AppStale: its cluster is not Connected, so what it reports may be
	// old.
	AppStale = "Stale"
	// AppNotConverged, as a filter, is any state but AppConverged.
	AppNotConverged = "NotConverged"
)

// AppStates are the states of AppStateOf, in the order pages show them.
var AppStates = []string{AppConverged, AppProgressing, AppFailed, AppPending, AppStale}

// AppStateOf says where a's cluster stands on the Application; empty when
// the hub wants none there (deleted, or one the cluster owns).
func AppStateOf(a App) string {
	d, o := a.Desired, a.Observed
	switch {
	case d == nil || d.Deleted:
		return ""
	case a.Stale:
		return AppStale
	case o == nil || o.AppliedGeneration < d.Generation:
		if o != nil && o.Rejected != nil && o.Rejected.Generation >= d.Generation {
			return AppFailed
		}
		return AppPending
	case o.Operation != nil && (o.Operation.Phase == schemas.OperationPhaseFailed || o.Operation.Phase == schemas.OperationPhaseError),
		o.Health != nil && o.Health.Status == "Degraded":
		return AppFailed
	case o.Sync != nil && o.Sync.Status == "Synced" && o.Health != nil && o.Health.Status == "Healthy":
		return AppConverged
	}
	return AppProgressing
}

// CheckAppState checks a filter of clusters by AppStateOf: one of
// AppStates, AppNotConverged, or empty for all.
func CheckAppState(filter string) error {
	if filter != "" && filter != AppNotConverged && !slices.Contains(AppStates, filter) {
		return badRequest("state %q: want one of %s or %s", filter, strings.Join(AppStates, ", "), AppNotConverged)
	}
	return nil
}

// InAppState reports whether a cluster in state st passes filter.
func InAppState(st, filter string) bool {
	return filter == "" || st == filter || (filter == AppNotConverged && st != AppConverged)
}

// AppSource is where an Application's manifests come from: its spec's
// source, or the first of its sources.
type AppSource struct {
	RepoURL        string `json:"repoURL,omitempty"`
	Path           string `json:"path,omitempty"`
	Chart          string `json:"chart,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// More counts the sources after the first.
	More int `json:"more,omitempty"`
}

// SourceOf is spec's source; nil when it names none or cannot be read.
func SourceOf(spec json.RawMessage) *AppSource {
	var s struct {
		Source  *AppSource  `json:"source"`
		Sources []AppSource `json:"sources"`
	}
	if len(spec) == 0 || json.Unmarshal(spec, &s) != nil {
		return nil
	}
	if s.Source == nil && len(s.Sources) > 0 {
		s.Source = &s.Sources[0]
		s.Source.More = len(s.Sources) - 1
	}
	return s.Source
}

// RevisionCount is how many clusters run one revision.
type RevisionCount struct {
	Revision string `json:"revision"`
	Clusters int    `json:"clusters"`
}

// AppSummary is one Application across the fleet.
type AppSummary struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Project   string            `json:"project,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Source    *AppSource        `json:"source,omitempty"`
	// Clusters counts the clusters the hub wants it on, and Counts those
	// by AppStates.
	Clusters int            `json:"clusters"`
	Counts   map[string]int `json:"counts"`
	// Revisions are the revisions its clusters report it synced to, the
	// most run first.
	Revisions []RevisionCount `json:"revisions,omitempty"`
	// ByLabel, when the request asked for a grid, is Revisions for the
	// clusters of each value of the grid's label ("" for none).
	ByLabel map[string][]RevisionCount `json:"byLabel,omitempty"`
}

// AppsRequest selects and pages a listing of the fleet's Applications.
type AppsRequest struct {
	// Search keeps Applications whose name contains it; Project those of
	// that project; Selector those whose labels match it.
	Search, Project, Selector string
	// Sync and Health keep Applications with at least one cluster
	// reporting that status; State those with at least one cluster in
	// that state (one of AppStates, or AppNotConverged).
	Sync, Health, State string
	// GridBy, a cluster label key, adds ByLabel to each item and the
	// label's values to the page's Columns.
	GridBy string
	// Page counts from 1; PerPage is at most MaxPerPage (default
	// DefaultPerPage).
	Page, PerPage int
}

// AppsPage is one page of the fleet's Applications, by namespace and
// name.
type AppsPage struct {
	Items []AppSummary `json:"items"`
	Total int          `json:"total"`
	Page  int          `json:"page"`
	Pages int          `json:"pages"`
	// Columns are the values of GridBy among the listed Applications'
	// clusters, sorted ("" last, for clusters without the label).
	Columns []string `json:"columns,omitempty"`
}

// ListApps answers r from q at now, from every cluster's rows.
func ListApps(ctx context.Context, q projector.Fleet, r AppsRequest, now time.Time, heartbeat time.Duration) (AppsPage, error) {
	sel, err := labels.Parse(r.Selector)
	if err != nil {
		return AppsPage{}, badRequest("selector %q: %v", r.Selector, err)
	}
	if err := CheckAppState(r.State); err != nil {
		return AppsPage{}, err
	}
	rows, err := q.Apps(ctx, projector.AppFilter{Brief: true})
	if err != nil {
		return AppsPage{}, fmt.Errorf("listing applications: %w", err)
	}
	clusters, err := q.ClusterSummaries(ctx)
	if err != nil {
		return AppsPage{}, fmt.Errorf("listing clusters: %w", err)
	}
	gridOf := map[string]string{}
	for _, c := range clusters {
		if c.Registration != nil {
			gridOf[c.Name] = c.Registration.Labels[r.GridBy]
		}
	}
	var kept []AppSummary
	newest := map[projector.AppKey]string{} // the cluster of each Application's newest desired state
	for _, group := range byApp(WithFreshness(rows, clusters, now, heartbeat)) {
		s, cluster, ok := summarize(group, r, sel, gridOf)
		if ok {
			kept = append(kept, s)
			newest[projector.AppKey{Namespace: s.Namespace, Name: s.Name}] = cluster
		}
	}
	per := cmp.Or(r.PerPage, DefaultPerPage)
	per = min(max(per, 1), MaxPerPage)
	out := AppsPage{Total: len(kept), Pages: max((len(kept)+per-1)/per, 1)}
	out.Page = min(max(r.Page, 1), out.Pages)
	out.Items = kept[min((out.Page-1)*per, len(kept)):min(out.Page*per, len(kept))]
	if r.GridBy != "" {
		out.Columns = columns(out.Items)
	}
	// The brief rows have no specs: read the newest of each listed one.
	for i, s := range out.Items {
		rows, err := q.Apps(ctx, projector.AppFilter{Cluster: newest[projector.AppKey{Namespace: s.Namespace, Name: s.Name}],
			Namespace: s.Namespace, Name: s.Name})
		if err != nil {
			return AppsPage{}, fmt.Errorf("reading application %s/%s: %w", s.Namespace, s.Name, err)
		}
		if len(rows) == 1 && rows[0].Desired != nil {
			out.Items[i].Source = SourceOf(rows[0].Desired.Spec)
		}
	}
	return out, nil
}

// byApp groups rows, which come by cluster, by namespace and name.
func byApp(rows []App) [][]App {
	groups := map[projector.AppKey][]App{}
	for _, a := range rows {
		k := projector.AppKey{Namespace: a.Namespace, Name: a.Name}
		groups[k] = append(groups[k], a)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b projector.AppKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := make([][]App, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// summarize sums up one Application's rows, names the cluster of its
// newest desired state, and says whether it passes r's filters.
func summarize(rows []App, r AppsRequest, sel labels.Selector, gridOf map[string]string) (AppSummary, string, bool) {
	s := AppSummary{Namespace: rows[0].Namespace, Name: rows[0].Name, Counts: map[string]int{}}
	var newest *projector.AppDesired
	var cluster string
	revs, grid := map[string]int{}, map[string]map[string]int{}
	sync, health := false, false
	for _, a := range rows {
		st := AppStateOf(a)
		if st == "" {
			continue
		}
		if newest == nil || a.Desired.UpdatedAt.After(newest.UpdatedAt) {
			newest, cluster = a.Desired, a.Cluster
		}
		s.Clusters++
		s.Counts[st]++
		o := a.Observed
		if o != nil && o.Sync != nil && o.Sync.Revision != "" {
			revs[o.Sync.Revision]++
			if r.GridBy != "" {
				v := gridOf[a.Cluster]
				if grid[v] == nil {
					grid[v] = map[string]int{}
				}
				grid[v][o.Sync.Revision]++
			}
		}
		sync = sync || (o != nil && o.Sync != nil && o.Sync.Status == r.Sync)
		health = health || (o != nil && o.Health != nil && o.Health.Status == r.Health)
	}
	if newest == nil {
		return s, "", false
	}
	s.Project, s.Labels = newest.Project, newest.Labels
	s.Revisions = revisionCounts(revs)
	if r.GridBy != "" {
		s.ByLabel = map[string][]RevisionCount{}
		for v, m := range grid {
			s.ByLabel[v] = revisionCounts(m)
		}
	}
	inState := r.State == "" || s.Counts[r.State] > 0 || (r.State == AppNotConverged && s.Counts[AppConverged] < s.Clusters)
	return s, cluster, strings.Contains(s.Name, r.Search) && (r.Project == "" || s.Project == r.Project) &&
		sel.Matches(labels.Set(s.Labels)) && (r.Sync == "" || sync) && (r.Health == "" || health) && inState
}

// revisionCounts are m's revisions, the most run first.
func revisionCounts(m map[string]int) []RevisionCount {
	out := make([]RevisionCount, 0, len(m))
	for rev, n := range m {
		out = append(out, RevisionCount{Revision: rev, Clusters: n})
	}
	slices.SortFunc(out, func(a, b RevisionCount) int {
		return cmp.Or(cmp.Compare(b.Clusters, a.Clusters), cmp.Compare(a.Revision, b.Revision))
	})
	return out
}

// columns are the grid label's values among items, sorted, "" last.
func columns(items []AppSummary) []string {
	seen := map[string]bool{}
	for _, s := range items {
		for v := range s.ByLabel {
			seen[v] = true
		}
	}
	out := slices.Sorted(maps.Keys(seen))
	if len(out) > 0 && out[0] == "" {
		out = append(out[1:], "")
	}
	return out
}
