package read

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/projector"
)

// Fleet listing limits.
const (
	DefaultPerPage = 50
	MaxPerPage     = 500
)

// Sorts of a fleet listing; a leading "-" reverses one.
var Sorts = []string{"name", "heartbeat", "lag", "apps"}

// FleetRequest selects, orders and pages a fleet listing.
type FleetRequest struct {
	// Selector is a Kubernetes label selector on the clusters' labels.
	Selector string
	// State is one of States, or empty for all.
	State string
	// Search keeps clusters whose name contains it.
	Search string
	// Sort is one of Sorts, optionally with a leading "-"; default name.
	Sort string
	// Page counts from 1; PerPage is at most MaxPerPage. A negative
	// PerPage asks for every match on one page.
	Page, PerPage int
}

// FleetPage is one page of a fleet listing.
type FleetPage struct {
	Items []Cluster `json:"items"`
	// Total is how many clusters matched; Page and Pages place this page.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
	// Counts counts the matching clusters by state, before the state
	// filter, so that a page can say how many are Stale.
	Counts map[string]int `json:"counts"`
}

// ListFleet answers r from q at now: it filters and sorts the clusters'
// summaries (one cheap query) and reads only the page's clusters in full,
// so that a page of a 10,000-cluster fleet costs what a page costs.
func ListFleet(ctx context.Context, q projector.Fleet, r FleetRequest, now time.Time, heartbeat time.Duration) (FleetPage, error) {
	sel, err := labels.Parse(r.Selector)
	if err != nil {
		return FleetPage{}, badRequest("selector %q: %v", r.Selector, err)
	}
	if r.State != "" && !slices.Contains(States, r.State) {
		return FleetPage{}, badRequest("state %q: want one of %s", r.State, strings.Join(States, ", "))
	}
	key, desc := strings.CutPrefix(cmp.Or(r.Sort, "name"), "-")
	if !slices.Contains(Sorts, key) {
		return FleetPage{}, badRequest("sort %q: want one of %s, optionally after -", r.Sort, strings.Join(Sorts, ", "))
	}
	sums, err := q.ClusterSummaries(ctx)
	if err != nil {
		return FleetPage{}, fmt.Errorf("listing clusters: %w", err)
	}
	out := FleetPage{Counts: map[string]int{}}
	kept := sums[:0]
	for _, c := range sums {
		var l labels.Set
		if c.Registration != nil {
			l = c.Registration.Labels
		}
		if !sel.Matches(l) || !strings.Contains(c.Name, r.Search) {
			continue
		}
		st := FreshnessOf(c.Row(), now, heartbeat).State
		out.Counts[st]++
		if r.State == "" || st == r.State {
			kept = append(kept, c)
		}
	}
	sortSummaries(kept, key, desc)
	if r.PerPage < 0 {
		out.Total, out.Page, out.Pages = len(kept), 1, 1
		out.Items, err = fullRows(ctx, q, kept, now, heartbeat)
		return out, err
	}
	per := r.PerPage
	if per <= 0 {
		per = DefaultPerPage
	}
	per = min(per, MaxPerPage)
	out.Total, out.Pages = len(kept), max((len(kept)+per-1)/per, 1)
	out.Page = min(max(r.Page, 1), out.Pages)
	page := kept[min((out.Page-1)*per, len(kept)):min(out.Page*per, len(kept))]
	out.Items = make([]Cluster, 0, len(page))
	for _, s := range page {
		c, ok, err := q.Cluster(ctx, s.Name)
		if err != nil {
			return FleetPage{}, fmt.Errorf("reading cluster %q: %w", s.Name, err)
		}
		if ok {
			out.Items = append(out.Items, ClusterOf(c, now, heartbeat))
		}
	}
	return out, nil
}

// fullRows reads the clusters of sums in full with one query, in sums'
// order.
func fullRows(ctx context.Context, q projector.Fleet, sums []projector.ClusterSummary, now time.Time, heartbeat time.Duration) ([]Cluster, error) {
	rows, err := q.Clusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	byName := make(map[string]projector.ClusterRow, len(rows))
	for _, c := range rows {
		byName[c.Name] = c
	}
	out := make([]Cluster, 0, len(sums))
	for _, s := range sums {
		if c, ok := byName[s.Name]; ok {
			out = append(out, ClusterOf(c, now, heartbeat))
		}
	}
	return out, nil
}

func sortSummaries(s []projector.ClusterSummary, key string, desc bool) {
	by := func(a, b projector.ClusterSummary) int {
		switch key {
		case "heartbeat":
			return a.HeartbeatAt.Compare(b.HeartbeatAt)
		case "lag":
			return cmp.Compare(a.ConfigLag, b.ConfigLag)
		case "apps":
			return cmp.Compare(a.Applications, b.Applications)
		}
		return cmp.Compare(a.Name, b.Name)
	}
	slices.SortStableFunc(s, func(a, b projector.ClusterSummary) int {
		c := by(a, b)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Name, b.Name))
	})
}
