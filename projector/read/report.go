package read

import (
	"context"
	"errors"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// Grouping and bucket values of a deployment report.
const (
	ByApp     = "app"
	ByProject = "project"
	ByCluster = "cluster"
	ByLabel   = "label"

	BucketDay  = "day"
	BucketWeek = "week"
)

// Groupings and Buckets list the values a report request accepts.
var (
	Groupings = []string{ByApp, ByProject, ByCluster, ByLabel}
	Buckets   = []string{BucketDay, BucketWeek}
)

// DefaultReportRange is how far back a report reaches when from is not given.
const DefaultReportRange = 30 * 24 * time.Hour

// ReportParams are a deployment report's parameters.
type ReportParams struct {
	// By is one of Groupings.
	By string `json:"by"`
	// Label is the label key to group by when By is ByLabel.
	Label string `json:"label,omitempty"`
	// Bucket is one of Buckets.
	Bucket string `json:"bucket"`
	// From and To bound the deployments' finish times: From ≤ t < To.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// ReportRequest is what a Reporter computes over: the checked parameters,
// and the deployment records and gaps between From and To.
type ReportRequest struct {
	ReportParams
	Deployments []projector.Deployment
	Gaps        []projector.Gap
}

// Reporter computes a deployment report's rows. Package projector/report
// computes the figures; the handler answers 501 without a Reporter.
type Reporter interface {
	DeploymentReport(ctx context.Context, req *ReportRequest) ([]ReportRow, error)
}

// ReporterFunc is a function that is a Reporter.
type ReporterFunc func(ctx context.Context, req *ReportRequest) ([]ReportRow, error)

// DeploymentReport calls f.
func (f ReporterFunc) DeploymentReport(ctx context.Context, req *ReportRequest) ([]ReportRow, error) {
	return f(ctx, req)
}

// ErrBadRequest marks an error a Reporter returns for parameters it
// refuses: the handler answers 400 with the error's message. Any other error
// is a 500, and its message stays in the server's log.
var ErrBadRequest = errors.New("bad request")
