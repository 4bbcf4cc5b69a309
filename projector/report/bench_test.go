package report

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// benchYear is 1,000 Applications × 1,000 deployments each over 2024, 5%
// of them failed, on 10 clusters, in 20 projects, with 8 teams, in the order
// a store returns them (by finish time).
var benchYear = sync.OnceValue(func() []projector.Deployment {
	const apps, perApp = 1000, 1000
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 366 * 24 * time.Hour / perApp
	recs := make([]projector.Deployment, 0, apps*perApp)
	for a := range apps {
		uid := fmt.Sprintf("uid-%04d", a)
		res := schemas.Resource{Cluster: fmt.Sprintf("cluster-%02d", a%10), Namespace: "argocd", Name: fmt.Sprintf("app-%04d", a)}
		project := fmt.Sprintf("project-%02d", a%20)
		labels := map[string]string{"team": fmt.Sprintf("team-%d", a%8)}
		prev := ""
		for k := range perApp {
			finished := start.Add(time.Duration(k)*step + time.Duration(a)*7*time.Second)
			d := schemas.DeploymentRecorded{Resource: res, DeploymentID: fmt.Sprintf("%s/%d", uid, k),
				Revision: fmt.Sprintf("%040x", a*perApp+k), PreviousRevision: prev, Phase: PhaseSucceeded,
				StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Project: project, Labels: labels, AppUID: uid}
			if splitmix(uint64(a*perApp+k))%20 == 0 {
				d.Phase = PhaseFailed
			} else {
				prev = d.Revision
			}
			recs = append(recs, projector.Deployment{DeploymentRecorded: d, EventID: d.DeploymentID})
		}
	}
	slices.SortStableFunc(recs, func(x, y projector.Deployment) int { return x.FinishedAt.Compare(y.FinishedAt) })
	return recs
})

// splitmix is SplitMix64's finalizer: a fixed, well-mixed hash.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// BenchmarkDeployments1M is one weekly report by project over a full year
// of 1M records: with a commit time known for every deployment, and
// without commit times.
func BenchmarkDeployments1M(b *testing.B) {
	recs := benchYear()
	commitTime := func(d projector.Deployment) (time.Time, bool) { return d.StartedAt.Add(-10 * time.Minute), true }
	for _, bc := range []struct {
		name       string
		commitTime func(projector.Deployment) (time.Time, bool)
	}{{"commit-time", commitTime}, {"no-commit-time", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			req := Request{By: ByProject, Bucket: Week, CommitTime: bc.commitTime,
				From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Deployments(recs, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Rows) != 20*53 {
					b.Fatalf("%d rows, want 20 projects × 53 weeks", len(rep.Rows))
				}
				syncs := 0
				for _, r := range rep.Rows {
					syncs += r.Deployments + r.Failures
				}
				if syncs != len(recs) {
					b.Fatalf("the rows count %d syncs, want all %d", syncs, len(recs))
				}
			}
		})
	}
}
