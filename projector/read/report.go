package read

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/report"
)

// Groupings and Buckets list the values a report request accepts.
var (
	Groupings = []string{string(report.ByApp), string(report.ByProject), string(report.ByCluster), string(report.ByLabel)}
	Buckets   = []string{string(report.Day), string(report.Week)}
)

// DefaultReportRange is how far back a report reaches when from is not given.
const DefaultReportRange = 30 * 24 * time.Hour

// ReportParams are a deployment report's query parameters.
type ReportParams struct {
	By     report.GroupBy
	Label  string
	Bucket report.Bucket
	// From and To bound the deployments' finish times, [From, To); zero
	// takes the server's default (To now, From 30 days before To).
	From, To time.Time
	// App, "namespace/name" with By app, keeps one Application's records
	// on every cluster: its totals per cluster drill down from its
	// fleet-wide total.
	App string
}

// Reporter computes a deployment report from deployment records and the
// request, whose From, To and Gaps the handler fills in. The records are
// every record that finished at or after From, including those after To,
// which tell when a failure in range was restored.
//
// The default is report.Deployments, whose lead time comes from the
// commit times the records carry; a Reporter that knows commit times from
// elsewhere sets req.CommitTime first.
type Reporter interface {
	DeploymentReport(ctx context.Context, recs []projector.Deployment, req report.Request) (report.Report, error)
}

// ReporterFunc is a function that is a Reporter.
type ReporterFunc func(ctx context.Context, recs []projector.Deployment, req report.Request) (report.Report, error)

// DeploymentReport calls f.
func (f ReporterFunc) DeploymentReport(ctx context.Context, recs []projector.Deployment, req report.Request) (report.Report, error) {
	return f(ctx, recs, req)
}

// reportDeployments is the default Reporter: report.Deployments.
func reportDeployments(_ context.Context, recs []projector.Deployment, req report.Request) (report.Report, error) {
	return report.Deployments(recs, req)
}

// RolloutParams are a rollout report's query parameters.
type RolloutParams struct {
	// Namespace and Placement name one placement; empty for all. A named
	// placement's rollouts list their clusters one by one.
	Namespace, Placement string
	// From and To bound when the changes were written, [From, To); zero
	// takes the server's default (To now, From 30 days before To).
	From, To time.Time
	// Newest keeps only each placement's newest change in range, and reads
	// only the deployment records since it.
	Newest bool
}

// RolloutReport is the rollouts of placement changes written in [From, To),
// newest first.
type RolloutReport struct {
	From     time.Time        `json:"from"`
	To       time.Time        `json:"to"`
	Rollouts []report.Rollout `json:"rollouts"`
}

// Rollouts computes the rollouts of p's placement changes from q's targets
// and deployment records. p's From and To must be set.
func Rollouts(ctx context.Context, q projector.Deliveries, p RolloutParams) (RolloutReport, error) {
	out := RolloutReport{From: p.From, To: p.To, Rollouts: []report.Rollout{}}
	targets, err := q.Targets(ctx, projector.DeploymentFilter{Namespace: p.Namespace, Name: p.Placement, From: p.From, To: p.To})
	if err != nil {
		return out, fmt.Errorf("listing placement targets: %w", err)
	}
	if p.Newest {
		targets = newestChanges(targets)
	}
	if len(targets) == 0 {
		return out, nil
	}
	recs, err := q.Deployments(ctx, projector.DeploymentFilter{Namespace: p.Namespace, Name: p.Placement, From: rolloutsFrom(targets)})
	if err != nil {
		return out, fmt.Errorf("listing deployments: %w", err)
	}
	out.Rollouts = nonNil(report.Rollouts(targets, recs, p.Placement != ""))
	return out, nil
}

// rolloutsFrom is when the deployment records a rollout of targets (by
// time) needs begin: a cluster may finish a sync before the change's log
// time by its own clock. Records of other Applications are left out by
// the report.
func rolloutsFrom(targets []projector.Target) time.Time {
	return targets[0].At.Add(-report.RolloutSkew)
}

// newestChanges keeps, of targets by time, those of each placement's
// newest generation.
func newestChanges(targets []projector.Target) []projector.Target {
	newest := map[[2]string]int64{}
	for _, t := range targets {
		k := [2]string{t.Namespace, t.Placement}
		newest[k] = max(newest[k], t.PlacementGeneration)
	}
	return slices.DeleteFunc(targets, func(t projector.Target) bool {
		return t.PlacementGeneration < newest[[2]string{t.Namespace, t.Placement}]
	})
}

// ReportWithRollouts computes the deployment report req asks for and the
// rollouts of the placement changes written in its range, reading the
// deployment records once for both. req's From and To must be set.
func ReportWithRollouts(ctx context.Context, q projector.Deliveries, req report.Request) (report.Report, RolloutReport, error) {
	ro := RolloutReport{From: req.From, To: req.To, Rollouts: []report.Rollout{}}
	targets, err := q.Targets(ctx, projector.DeploymentFilter{From: req.From, To: req.To})
	if err != nil {
		return report.Report{}, ro, fmt.Errorf("listing placement targets: %w", err)
	}
	from := req.From
	if len(targets) > 0 && rolloutsFrom(targets).Before(from) {
		from = rolloutsFrom(targets)
	}
	recs, err := q.Deployments(ctx, projector.DeploymentFilter{From: from})
	if err != nil {
		return report.Report{}, ro, fmt.Errorf("listing deployments: %w", err)
	}
	if len(targets) > 0 {
		ro.Rollouts = nonNil(report.Rollouts(targets, recs, false))
	}
	// The report takes the records from its From on, as DeploymentReport
	// reads them; they come by finish time.
	i, _ := slices.BinarySearchFunc(recs, req.From, func(d projector.Deployment, t time.Time) int {
		if d.FinishedAt.Before(t) {
			return -1
		}
		return 1
	})
	rep, err := deploymentReport(ctx, q, nil, req, recs[i:])
	return rep, ro, err
}
