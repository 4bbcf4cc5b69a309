package read

import (
	"context"
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
