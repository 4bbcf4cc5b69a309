package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// Rollout is one placement change across the fleet: the clusters the hub
// wrote one placement generation to (its targets), and how far it got. It
// is done when every targeted cluster has converged: recorded a successful
// sync with the Application at the change's generation or a later one.
// docs/projector.md ("Rollouts") defines every number.
type Rollout struct {
	Namespace string `json:"namespace"`
	Placement string `json:"placement"`
	// Generation is the placement's generation: one change.
	Generation int64 `json:"generation"`
	// Started is when the hub wrote the change to its first cluster.
	Started time.Time `json:"started"`
	// Targeted counts the clusters it was written to, Converged those that
	// converged, Failed those not converged whose last sync since failed,
	// and Pending the rest.
	Targeted  int `json:"targeted"`
	Converged int `json:"converged"`
	Failed    int `json:"failed"`
	Pending   int `json:"pending"`
	// Done is when the last targeted cluster converged; absent until all
	// have. DurationSeconds is Done less Started.
	Done            *time.Time `json:"done,omitempty"`
	DurationSeconds *float64   `json:"durationSeconds,omitempty"`
	// SpreadSeconds is the time from the first cluster's convergence to the
	// last one's so far: how far apart the fleet deployed the change.
	SpreadSeconds float64 `json:"spreadSeconds"`
	// Times summarises, over the converged clusters, the time from the
	// change reaching each cluster's log to its convergence.
	Times *Durations `json:"times,omitempty"`
	// Superseded is set when a newer generation of the placement was
	// written since: a cluster that converged to that one counts here too.
	Superseded bool `json:"superseded,omitempty"`
	// Clusters are the targets one by one, when the request asks.
	Clusters []RolloutCluster `json:"clusters,omitempty"`
}

// RolloutCluster is one targeted cluster of a rollout.
type RolloutCluster struct {
	Cluster string `json:"cluster"`
	// Generation is the Application's generation the change wrote, At when.
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"`
	// Converged is the finish of the sync that converged it, if one has.
	Converged *time.Time `json:"converged,omitempty"`
	Failed    bool       `json:"failed,omitempty"`
}

// RolloutSkew is how much earlier than the change's log time a cluster's
// sync may finish by its own clock: callers read deployment records from
// the earliest target's time less this.
const RolloutSkew = time.Hour

// rolloutKey names one rollout.
type rolloutKey struct {
	namespace, placement string
	generation           int64
}

// Rollouts computes the rollouts of targets, newest first, from the
// deployment records of their Applications (others are ignored); detail
// adds each rollout's clusters. Targets are de-duplicated by event id, and
// a cluster counts once per rollout (its first target).
func Rollouts(targets []projector.Target, recs []projector.Deployment, detail bool) []Rollout {
	byApp := map[projector.AppKey][]*projector.Deployment{}
	for i := range targets {
		byApp[targets[i].AppKey] = nil
	}
	for i := range recs {
		d := &recs[i]
		k := projector.AppKey{Cluster: d.Cluster, Namespace: d.Namespace, Name: d.Name}
		if list, ok := byApp[k]; ok {
			byApp[k] = append(list, d)
		}
	}
	for _, list := range byApp {
		slices.SortStableFunc(list, func(a, b *projector.Deployment) int { return a.FinishedAt.Compare(b.FinishedAt) })
	}
	groups := map[rolloutKey][]*projector.Target{}
	newest := map[[2]string]int64{}
	seenEvent := map[string]bool{}
	for i := range targets {
		t := &targets[i]
		if t.EventID != "" && seenEvent[t.EventID] {
			continue
		}
		seenEvent[t.EventID] = true
		k := rolloutKey{t.Namespace, t.Placement, t.PlacementGeneration}
		if slices.ContainsFunc(groups[k], func(o *projector.Target) bool { return o.Cluster == t.Cluster }) {
			continue
		}
		groups[k] = append(groups[k], t)
		p := [2]string{t.Namespace, t.Placement}
		newest[p] = max(newest[p], t.PlacementGeneration)
	}
	out := make([]Rollout, 0, len(groups))
	for k, ts := range groups {
		r := rollout(k, ts, byApp, detail)
		r.Superseded = newest[[2]string{k.namespace, k.placement}] > k.generation
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rollout) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace+"/"+a.Placement, b.Namespace+"/"+b.Placement); c != 0 {
			return c
		}
		return cmp.Compare(b.Generation, a.Generation)
	})
	return out
}

// rollout computes one rollout from its targets.
func rollout(k rolloutKey, ts []*projector.Target, byApp map[projector.AppKey][]*projector.Deployment, detail bool) Rollout {
	r := Rollout{Namespace: k.namespace, Placement: k.placement, Generation: k.generation, Targeted: len(ts)}
	var first, last time.Time
	var times []time.Duration
	for _, t := range ts {
		if r.Started.IsZero() || t.At.Before(r.Started) {
			r.Started = t.At
		}
		c := RolloutCluster{Cluster: t.Cluster, Generation: t.Generation, At: t.At}
		c.Converged, c.Failed = converged(byApp[t.AppKey], t.Generation)
		switch {
		case c.Converged != nil:
			r.Converged++
			at := *c.Converged
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
			times = append(times, max(at.Sub(t.At), 0))
		case c.Failed:
			r.Failed++
		default:
			r.Pending++
		}
		if detail {
			r.Clusters = append(r.Clusters, c)
		}
	}
	slices.SortFunc(r.Clusters, func(a, b RolloutCluster) int { return strings.Compare(a.Cluster, b.Cluster) })
	r.Times = summarize(times)
	if r.Converged > 0 {
		r.SpreadSeconds = last.Sub(first).Seconds()
	}
	if r.Converged == r.Targeted {
		done := last
		d := max(done.Sub(r.Started), 0).Seconds()
		r.Done, r.DurationSeconds = &done, &d
	}
	return r
}

// converged returns the finish of the first successful sync of recs (one
// Application's, by finish time) at generation gen or later, or whether
// the last sync at gen or later failed when none succeeded.
func converged(recs []*projector.Deployment, gen int64) (*time.Time, bool) {
	failed := false
	for _, d := range recs {
		if d.Generation < gen {
			continue
		}
		switch d.Phase {
		case PhaseSucceeded:
			at := d.FinishedAt
			return &at, false
		case PhaseFailed, PhaseError:
			failed = true
		}
	}
	return nil, failed
}
