package read_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/report"
)

// deploymentReads counts a Query's reads of deployment records; the look
// for the last one before a report's range (Last 1) is no read of them.
type deploymentReads struct {
	*readtest.Query
	reads int
}

func (c *deploymentReads) Deployments(ctx context.Context, f projector.DeploymentFilter) ([]projector.Deployment, error) {
	if f.Last != 1 {
		c.reads++
	}
	return c.Query.Deployments(ctx, f)
}

// TestReportWithRollouts: the report and the rollouts of one range, from
// one read of the deployment records, are what the two computed apart
// give.
func TestReportWithRollouts(t *testing.T) {
	now := readtest.Now()
	req := report.Request{By: report.ByCluster, Bucket: report.Day, From: now.Add(-7 * 24 * time.Hour), To: now}
	q := &deploymentReads{Query: readtest.Fleet()}
	// A change written just after From, deployed on one cluster just
	// before From by its clock: the rollout reads it, the report must not.
	key := projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "billing"}
	q.TargetRows = append(q.TargetRows, projector.Target{AppKey: key, Placement: "billing", PlacementGeneration: 1,
		Generation: 9, EventID: "ev-target-billing", At: req.From.Add(time.Minute)})
	early := q.DeploymentRows[3]
	early.DeploymentID, early.EventID, early.Generation = "early", "ev-early", 9
	early.FinishedAt, early.StartedAt = req.From.Add(-30*time.Minute), req.From.Add(-31*time.Minute)
	q.DeploymentRows = append(q.DeploymentRows, early)
	rep, ro, err := read.ReportWithRollouts(t.Context(), q, req)
	if err != nil || q.reads != 1 {
		t.Fatalf("%d reads of the deployments, %v", q.reads, err)
	}
	wantRep, err := read.DeploymentReport(t.Context(), q, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	wantRo, err := read.Rollouts(t.Context(), q, read.RolloutParams{From: req.From, To: req.To})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantRep, rep); diff != "" {
		t.Errorf("report (-apart +together)\n%s", diff)
	}
	if diff := cmp.Diff(wantRo, ro); diff != "" || len(ro.Rollouts) != 2 || ro.Rollouts[1].Converged != 1 {
		t.Errorf("rollouts (-apart +together)\n%s", diff)
	}
}

// TestNewestRollout: Newest gives each placement's newest change alone, as
// it is among all of them.
func TestNewestRollout(t *testing.T) {
	now := readtest.Now()
	p := read.RolloutParams{Namespace: "argocd", Placement: "guestbook", From: now.Add(-30 * 24 * time.Hour), To: now}
	all, err := read.Rollouts(t.Context(), readtest.Fleet(), p)
	if err != nil || len(all.Rollouts) != 2 {
		t.Fatalf("rollouts %+v, %v", all, err)
	}
	p.Newest = true
	newest, err := read.Rollouts(t.Context(), readtest.Fleet(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all.Rollouts[:1], newest.Rollouts); diff != "" {
		t.Errorf("newest (-among all +alone)\n%s", diff)
	}
}
