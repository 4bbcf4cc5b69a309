package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

func target(cluster string, pgen, gen int64, at time.Time) projector.Target {
	return projector.Target{AppKey: projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: "web"}, Placement: "web",
		PlacementGeneration: pgen, Generation: gen, EventID: cluster + "-" + at.Format(time.RFC3339), At: at}
}

func synced(cluster, phase string, gen int64, at time.Time) projector.Deployment {
	return projector.Deployment{DeploymentRecorded: schemas.DeploymentRecorded{
		Resource:     schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "web", Generation: gen},
		DeploymentID: cluster + "/" + at.Format(time.RFC3339), Revision: "r", Phase: phase, StartedAt: at.Add(-time.Minute), FinishedAt: at}}
}

// TestRollouts: a placement change is done when every cluster it was
// written to recorded a successful sync at its generation or later; its
// spread runs from the first convergence to the last; a failure, a sync of
// an older generation or of another Application does not converge one.
func TestRollouts(t *testing.T) {
	at := func(min int) time.Time { return jan(2, 10, min) }
	targets := []projector.Target{
		// Generation 1 reached three clusters; all converged.
		target("c1", 1, 1, at(0)), target("c2", 1, 1, at(1)), target("c3", 1, 1, at(1)),
		// Generation 2 reached three; c1 converged, c2 failed, c3 waits.
		target("c1", 2, 2, at(30)), target("c2", 2, 2, at(30)), target("c3", 2, 2, at(31)),
		target("c3", 2, 2, at(31)), // the same event again
	}
	targets[6].EventID = targets[5].EventID
	recs := []projector.Deployment{
		synced("c1", PhaseSucceeded, 1, at(2)),
		synced("c2", PhaseFailed, 1, at(3)),
		synced("c2", PhaseSucceeded, 1, at(5)), // converged after a failure
		synced("c3", PhaseSucceeded, 1, at(11)),
		synced("c1", PhaseSucceeded, 2, at(33)),
		synced("c2", PhaseFailed, 2, at(34)),
		synced("c3", PhaseSucceeded, 1, at(35)), // still generation 1
	}
	other := synced("c3", PhaseSucceeded, 2, at(36))
	other.Name = "api" // another Application
	recs = append(recs, other)

	got := Rollouts(targets, recs, true)
	done := at(11)
	took := (11 * time.Minute).Seconds()
	conv := func(min int) *time.Time { t := at(min); return &t }
	want := []Rollout{{
		Namespace: "argocd", Placement: "web", Generation: 2, Started: at(30),
		Targeted: 3, Converged: 1, Failed: 1, Pending: 1,
		Times: &Durations{Count: 1, Median: 3 * time.Minute, P90: 3 * time.Minute, Mean: 3 * time.Minute},
		Clusters: []RolloutCluster{
			{Cluster: "c1", Generation: 2, At: at(30), Converged: conv(33)},
			{Cluster: "c2", Generation: 2, At: at(30), Failed: true},
			{Cluster: "c3", Generation: 2, At: at(31)},
		},
	}, {
		Namespace: "argocd", Placement: "web", Generation: 1, Started: at(0),
		Targeted: 3, Converged: 3, Done: &done, DurationSeconds: &took, SpreadSeconds: (9 * time.Minute).Seconds(),
		// 2, 4 and 10 minutes after the change reached each cluster.
		Times:      &Durations{Count: 3, Median: 4 * time.Minute, P90: 10 * time.Minute, Mean: 16 * time.Minute / 3},
		Superseded: true,
		Clusters: []RolloutCluster{
			{Cluster: "c1", Generation: 1, At: at(0), Converged: conv(2)},
			{Cluster: "c2", Generation: 1, At: at(1), Converged: conv(5)},
			{Cluster: "c3", Generation: 1, At: at(1), Converged: conv(11)},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rollouts (-want +got)\n%s", diff)
	}
	if brief := Rollouts(targets, recs, false); brief[0].Clusters != nil || brief[1].Converged != 3 {
		t.Errorf("without detail: %+v", brief)
	}
	if none := Rollouts(nil, recs, true); len(none) != 0 {
		t.Errorf("no targets, rollouts %+v", none)
	}
}
