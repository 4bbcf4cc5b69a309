package read

import (
	"context"
	"fmt"
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
func Rollouts(ctx context.Context, q projector.Query, p RolloutParams) (RolloutReport, error) {
	out := RolloutReport{From: p.From, To: p.To, Rollouts: []report.Rollout{}}
	targets, err := q.Targets(ctx, projector.DeploymentFilter{Namespace: p.Namespace, Name: p.Placement, From: p.From, To: p.To})
	if err != nil {
		return out, fmt.Errorf("listing placement targets: %w", err)
	}
	if len(targets) == 0 {
		return out, nil
	}
	// A cluster may finish a sync before the change's log time by its own
	// clock; records of other Applications are left out by the report.
	recs, err := q.Deployments(ctx, projector.DeploymentFilter{Namespace: p.Namespace, Name: p.Placement,
		From: targets[0].At.Add(-report.RolloutSkew)})
	if err != nil {
		return out, fmt.Errorf("listing deployments: %w", err)
	}
	out.Rollouts = nonNil(report.Rollouts(targets, recs, p.Placement != ""))
	return out, nil
}
