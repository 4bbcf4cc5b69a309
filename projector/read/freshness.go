package read

import (
	"time"

	"github.com/argosyproj/argosy/projector"
)

// States of a cluster, from its registration and its last heartbeat. A
// cluster's state, and so its Applications' status, is only as fresh as its
// last heartbeat: a spoke sends one every heartbeat interval, and status
// deltas only on change. Once the last heartbeat is older than three
// intervals, what the view holds may no longer be true, so the cluster is
// Stale and its Applications with it: shown with the heartbeat's age, never
// as current.
const (
	// StateConnected: the last heartbeat is younger than three intervals.
	StateConnected = "Connected"
	// StateStale: the last heartbeat is older than three intervals.
	StateStale = "Stale"
	// StateUnknown: the cluster has never sent a heartbeat.
	StateUnknown = "Unknown"
	// StateDeregistered: the hub deregistered the cluster.
	StateDeregistered = "Deregistered"
)

// States lists the cluster states.
var States = []string{StateConnected, StateStale, StateUnknown, StateDeregistered}

// Freshness says how current a cluster's reported state is at now, given
// the heartbeat interval.
type Freshness struct {
	// State is one of the State constants.
	State string
	// Age is the age of the last heartbeat; zero when there is none.
	Age time.Duration
}

// FreshnessOf returns the freshness of a cluster at now.
func FreshnessOf(c projector.ClusterRow, now time.Time, heartbeat time.Duration) Freshness {
	var f Freshness
	if c.Beat != nil {
		f.Age = max(now.Sub(c.Beat.At), 0)
	}
	switch {
	case c.Registration != nil && !c.Registration.Registered:
		f.State = StateDeregistered
	case c.Beat == nil:
		f.State = StateUnknown
	case f.Age < 3*heartbeat:
		f.State = StateConnected
	default:
		f.State = StateStale
	}
	return f
}

// Current reports whether the cluster's reported state can be shown as
// current: it is connected.
func (f Freshness) Current() bool { return f.State == StateConnected }

// ageSeconds is an age in whole seconds for a response, nil if unknown.
func ageSeconds(d time.Duration, known bool) *int64 {
	if !known {
		return nil
	}
	s := int64(d / time.Second)
	return &s
}

// ClusterOf returns a cluster's row with its freshness at now.
func ClusterOf(c projector.ClusterRow, now time.Time, heartbeat time.Duration) Cluster {
	f := FreshnessOf(c, now, heartbeat)
	return Cluster{ClusterRow: c, Connected: f.Current(), State: f.State, HeartbeatAgeSeconds: ageSeconds(f.Age, c.Beat != nil)}
}

func (h *Handler) clusterOf(c projector.ClusterRow) Cluster {
	return ClusterOf(c, h.now(), h.heartbeat)
}

// withFreshness returns rows with their clusters' freshness.
func (h *Handler) withFreshness(rows []projector.AppRow, clusters []projector.ClusterSummary) []App {
	return WithFreshness(rows, clusters, h.now(), h.heartbeat)
}

// WithFreshness returns Application rows with the freshness of their
// clusters at now; a cluster missing from clusters is Unknown. The
// clusters' summaries are enough: freshness needs no counts.
func WithFreshness(rows []projector.AppRow, clusters []projector.ClusterSummary, now time.Time, heartbeat time.Duration) []App {
	by := make(map[string]projector.ClusterRow, len(clusters))
	for _, c := range clusters {
		by[c.Name] = c.Row()
	}
	out := make([]App, len(rows))
	for i, r := range rows {
		c, ok := by[r.Cluster]
		if !ok {
			c = projector.ClusterRow{Name: r.Cluster}
		}
		f := FreshnessOf(c, now, heartbeat)
		out[i] = App{AppRow: r, Stale: !f.Current(), ClusterState: f.State, HeartbeatAgeSeconds: ageSeconds(f.Age, c.Beat != nil)}
	}
	return out
}

// StateText is a state as people read it: a Stale one with the age of its
// last heartbeat ("Stale 12m30s"), so that old status is never shown as
// current.
func StateText(state string, ageSeconds *int64) string {
	if state == StateStale && ageSeconds != nil {
		return state + " " + (time.Duration(*ageSeconds) * time.Second).String()
	}
	return state
}
