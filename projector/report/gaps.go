package report

import (
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// countGaps counts, per group, the gaps in req.Gaps (de-duplicated by event
// id) that may hide deployments finished in [from, to). The deployments a
// gap hides finished after its Application's last recorded deployment
// (LastRecorded, when the input holds that record) and before the gap was
// recorded (At); a gap counts when that window meets the range. apps are
// recs' indexes by Application, in finish order.
func countGaps(recs []projector.Deployment, apps map[appID][]int32, req *Request, from, to time.Time) []GapCount {
	if len(req.Gaps) == 0 {
		return nil
	}
	seen := make(map[string]struct{}, len(req.Gaps))
	counts := make(map[string]int)
	for i := range req.Gaps {
		g := &req.Gaps[i]
		if g.EventID != "" {
			if _, dup := seen[g.EventID]; dup {
				continue
			}
			seen[g.EventID] = struct{}{}
		}
		idx := apps[appID{cluster: g.Cluster, namespace: g.Namespace, name: g.Name, uid: g.AppUID}]
		if mayHide(recs, idx, g, from, to) {
			counts[gapGroup(recs, idx, g, req)]++
		}
	}
	out := make([]GapCount, 0, len(counts))
	for group, n := range counts {
		out = append(out, GapCount{Group: group, Gaps: n})
	}
	slices.SortFunc(out, func(a, b GapCount) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// mayHide reports whether the deployments g hides may have finished in
// [from, to); idx are the indexes of its Application's records.
func mayHide(recs []projector.Deployment, idx []int32, g *projector.Gap, from, to time.Time) bool {
	if !g.At.IsZero() && !g.At.After(from) {
		return false
	}
	if g.LastRecorded == nil {
		return true
	}
	for _, i := range idx {
		d := &recs[i]
		if d.HistoryID != nil && *d.HistoryID == *g.LastRecorded {
			return d.FinishedAt.Before(to)
		}
	}
	return true // the last recorded deployment is not in the input
}

// gapGroup returns the group of a gap. A gap carries no project or labels,
// so for those it takes its Application's latest record in the input, and
// Unknown if there is none.
func gapGroup(recs []projector.Deployment, idx []int32, g *projector.Gap, req *Request) string {
	appGroup := g.Cluster + "/" + g.Namespace + "/" + g.Name
	switch req.By {
	case ByApp:
		return appGroup
	case ByCluster:
		return g.Cluster
	}
	if len(idx) == 0 {
		return Unknown
	}
	return groupOf(req, &recs[idx[len(idx)-1]], appGroup)
}
