package report

import (
	"slices"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// healthLine is one Application's health changes, by time.
type healthLine []projector.HealthChange

// healthByApp indexes health changes by Application, each by time.
func healthByApp(hs []projector.HealthChange) map[projector.AppKey]healthLine {
	out := map[projector.AppKey]healthLine{}
	for _, h := range hs {
		out[h.AppKey] = append(out[h.AppKey], h)
	}
	for _, l := range out {
		slices.SortStableFunc(l, func(a, b projector.HealthChange) int { return a.At.Compare(b.At) })
	}
	return out
}

// restoredBy returns when the Application was Healthy again after the
// successful deployment that finished at success: then, if its last health
// change before it says Healthy (or none does, or no health is known), or
// else at its first change to Healthy after; false if none came.
func (l healthLine) restoredBy(success time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(l, success, func(h projector.HealthChange, t time.Time) int {
		if h.At.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 || l[i-1].Health == projector.HealthHealthy {
		return success, true
	}
	return l.healthyAfter(i)
}

// healthyAfter returns the time of the first change to Healthy from index
// i on.
func (l healthLine) healthyAfter(i int) (time.Time, bool) {
	for ; i < len(l); i++ {
		if l[i].Health == projector.HealthHealthy {
			return l[i].At, true
		}
	}
	return time.Time{}, false
}

// degraded adds the times one Application turned Degraded in range after a
// successful deployment (a failed one's episode is the failure's): each
// counts in its bucket, and its time to Healthy again in recovery time.
// idx are its records in finish order.
func (b *builder) degraded(recs []projector.Deployment, id appID, idx []int32) {
	line := b.health[projector.AppKey{Cluster: id.cluster, Namespace: id.namespace, Name: id.name}]
	var appGroup string
	if b.req.By == ByApp {
		appGroup = id.cluster + "/" + id.namespace + "/" + id.name
	}
	for i, h := range line {
		if h.Health != projector.HealthDegraded || h.At.Before(b.from) || !h.At.Before(b.to) {
			continue
		}
		// The Application's last deployment before it turned Degraded.
		n, _ := slices.BinarySearchFunc(idx, h.At, func(j int32, t time.Time) int {
			if recs[j].FinishedAt.After(t) {
				return 1
			}
			return -1
		})
		if n == 0 || recs[idx[n-1]].Phase != PhaseSucceeded {
			continue
		}
		a := b.row(b.group(&recs[idx[n-1]], appGroup), h.At)
		a.degraded++
		if end, ok := line.healthyAfter(i + 1); ok {
			a.restores = append(a.restores, end.Sub(h.At))
		} else {
			a.unrestored++
		}
	}
}
