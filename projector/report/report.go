// Package report computes deployment reports from the projector's
// deployment records: deployment frequency, change failure rate, time to
// restore and lead time, per group (Application, project, cluster or label
// value) and per day or ISO week, with the deployment gaps that may make the
// numbers incomplete. It owns the arithmetic only: it is pure, and the
// caller reads the records and gaps from a projector.Store and passes them
// in. docs/projector.md ("Report metrics") defines every number.
package report

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// GroupBy says what the rows of a report are grouped by.
type GroupBy string

// Groupings.
const (
	// ByApp groups by Application: "cluster/namespace/name".
	ByApp GroupBy = "app"
	// ByProject groups by the Application's AppProject.
	ByProject GroupBy = "project"
	// ByCluster groups by cluster name.
	ByCluster GroupBy = "cluster"
	// ByLabel groups by the value of one Application label (Request.Label).
	ByLabel GroupBy = "label"
)

// Bucket is the length of a report row's time bucket.
type Bucket string

// Buckets, in UTC.
const (
	// Day buckets start at 00:00 UTC.
	Day Bucket = "day"
	// Week buckets are ISO weeks: they start on Monday at 00:00 UTC.
	Week Bucket = "week"
)

// Group names for records that have no value for the grouping.
const (
	// None is the group of records without a project (ByProject) or
	// without the label (ByLabel).
	None = "(none)"
	// Unknown is the group of gaps whose Application has no deployment
	// record in the input, so its project and labels are unknown.
	Unknown = "(unknown)"
)

// Record phases.
const (
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
	PhaseError     = "Error"
)

// ErrInvalidRequest is returned, wrapped, for a request that cannot be
// answered.
var ErrInvalidRequest = errors.New("invalid report request")

// ErrTooMany is returned, wrapped, for more records than one report reads.
var ErrTooMany = errors.New("too many records for one report")

// Request says which report to compute.
type Request struct {
	// By is the grouping; Label is the label key when By is ByLabel.
	By    GroupBy
	Label string
	// Bucket is the length of each row's time bucket.
	Bucket Bucket
	// From and To bound the report, half-open [From, To), by the records'
	// finish time. Both are required.
	From, To time.Time
	// CommitTime returns the commit time of a deployment's revision, if it
	// is known; nil means RecordedCommitTime, the time the record carries.
	CommitTime func(projector.Deployment) (time.Time, bool)
	// Gaps are the deployment gaps to count per group; optional.
	Gaps []projector.Gap
	// Namespace and Name, when given, keep the records of one Application
	// on every cluster that has it: the drill-down of one row of
	// Applications. They go together, with By ByApp.
	Namespace, Name string
	// Since is when the deployment records begin: the finish of the first
	// record the store holds, where that is after From. Zero means the
	// records reach back before From. Rates divide by the span the records
	// cover, never by days before the first record.
	Since time.Time
	// Now is when the report is computed; where To is later, the records
	// cover the range only up to Now. Zero means To.
	Now time.Time
	// Health are the Applications' health changes from From on; optional.
	// With them, a failure is recovered once its Application is Healthy
	// after the next successful deployment, and a turn to Degraded after a
	// successful deployment counts (Row.Degraded) with its own recovery.
	Health []projector.HealthChange
}

// Validate reports whether the request can be answered.
func (r *Request) Validate() error {
	switch r.By {
	case ByApp, ByProject, ByCluster:
		if r.Label != "" {
			return fmt.Errorf("%w: label %q given when grouping by %s", ErrInvalidRequest, r.Label, r.By)
		}
	case ByLabel:
		if r.Label == "" {
			return fmt.Errorf("%w: grouping by label needs a label key", ErrInvalidRequest)
		}
	default:
		return fmt.Errorf("%w: unknown grouping %q (want app, project, cluster or label)", ErrInvalidRequest, r.By)
	}
	if (r.Namespace == "") != (r.Name == "") {
		return fmt.Errorf("%w: an Application is named by namespace and name", ErrInvalidRequest)
	}
	if r.Name != "" && r.By != ByApp {
		return fmt.Errorf("%w: one Application's report is grouped by app, not %s", ErrInvalidRequest, r.By)
	}
	if r.Bucket != Day && r.Bucket != Week {
		return fmt.Errorf("%w: unknown bucket %q (want day or week)", ErrInvalidRequest, r.Bucket)
	}
	if r.From.IsZero() || r.To.IsZero() {
		return fmt.Errorf("%w: from and to are both required", ErrInvalidRequest)
	}
	if !r.From.Before(r.To) {
		return fmt.Errorf("%w: from %s is not before to %s", ErrInvalidRequest,
			r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	}
	return nil
}

// Report is a deployment report: one row per group and bucket that had a
// sync in range (a missing row means zeros), ordered by
// group, then bucket.
type Report struct {
	By     GroupBy   `json:"by"`
	Label  string    `json:"label,omitempty"`
	Bucket Bucket    `json:"bucket"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// App is "namespace/name" when the report keeps one Application's
	// records (Request.Namespace and Name).
	App string `json:"app,omitempty"`
	// CoveredFrom and CoveredTo are the span the records cover: from the
	// later of From and the first record (Request.Since), to the earlier of
	// To and Request.Now. Every rate divides by the part of it that its
	// row or total spans, and by one day at least: a part of a day is
	// not extrapolated to a whole one. Equal when there is no record.
	CoveredFrom time.Time `json:"coveredFrom"`
	CoveredTo   time.Time `json:"coveredTo"`
	Rows        []Row     `json:"rows"`
	// Totals are each group's numbers over the whole range, by group: the
	// same groups as Rows.
	Totals []Total `json:"totals"`
	// Applications, grouping by app, are each Application's numbers over
	// the whole range summed over every cluster that has it, by
	// "namespace/name"; their Group is that name, and each Totals group
	// "cluster/namespace/name" whose namespace/name it is drills down to
	// it. Empty for other groupings.
	Applications []Total `json:"applications,omitempty"`
	// Gaps counts, per group, the deployment gaps that may hide
	// deployments in range: where it is not zero, that group's numbers may
	// be incomplete. Groups without gaps are left out.
	Gaps []GapCount `json:"gaps,omitempty"`
	// Ignored counts the records in range whose phase is neither
	// Succeeded, Failed nor Error.
	Ignored int `json:"ignored,omitempty"`
}

// Row is one group's numbers in one time bucket.
type Row struct {
	Group string `json:"group"`
	// Start and End bound the bucket, [Start, End), even where the
	// report's range cuts it short.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Deployments counts the successful syncs that changed something;
	// Failures the failed ones (phase Failed or Error).
	Deployments int `json:"deployments"`
	Failures    int `json:"failures"`
	// Unchanged counts the syncs left out of Deployments and Failures
	// because they deployed what was there before: re-syncs that changed
	// nothing and self-heals that reverted drift (the record's unchanged).
	Unchanged int `json:"unchanged"`
	// Degraded counts the times an Application turned Degraded after a
	// successful deployment (with Request.Health).
	Degraded int `json:"degraded"`
	// PerDay is the deployment frequency: Deployments divided by the days
	// of the bucket that the records cover (Report.CoveredFrom to
	// CoveredTo), and by one day at least.
	PerDay float64 `json:"deploymentsPerDay"`
	// ChangeFailureRate is Failures / (Deployments + Failures), 0 when
	// both are 0.
	ChangeFailureRate float64 `json:"changeFailureRate"`
	// TimeToRestore is the failed deployment recovery time: for the
	// failures and Degraded turns in the bucket that recovered, the time
	// from each to its Application's recovery (a later successful
	// deployment, and Healthy by then or after it where health is known;
	// Healthy again for a Degraded turn); nil if none recovered.
	// Unrestored counts those that did not.
	TimeToRestore *Durations `json:"timeToRestore,omitempty"`
	Unrestored    int        `json:"unrestored"`
	// LeadTime summarises, for the deployments that changed the revision
	// and whose commit time is known, the time from the commit to the end
	// of the deployment; nil if none is known. LeadTimeUnknown counts the
	// revision changes whose commit time is not known.
	LeadTime        *Durations `json:"leadTime,omitempty"`
	LeadTimeUnknown int        `json:"leadTimeUnknown"`
}

// Total is one group's numbers over the whole range: its rows summed,
// with the durations summarised over all of them.
type Total struct {
	Group string `json:"group"`
	// Clusters counts the clusters with a record in the group's rows.
	Clusters    int `json:"clusters"`
	Deployments int `json:"deployments"`
	Failures    int `json:"failures"`
	Unchanged   int `json:"unchanged"`
	Degraded    int `json:"degraded"`
	// PerDay is Deployments divided by the days from CoveredFrom to
	// CoveredTo, and by one day at least.
	PerDay            float64    `json:"deploymentsPerDay"`
	ChangeFailureRate float64    `json:"changeFailureRate"`
	TimeToRestore     *Durations `json:"timeToRestore,omitempty"`
	Unrestored        int        `json:"unrestored"`
	LeadTime          *Durations `json:"leadTime,omitempty"`
	LeadTimeUnknown   int        `json:"leadTimeUnknown"`
	// Gaps counts the group's deployment gaps (Report.Gaps).
	Gaps int `json:"gaps"`
}

// GapCount is the number of deployment gaps of one group.
type GapCount struct {
	Group string `json:"group"`
	Gaps  int    `json:"gaps"`
}

// Deployments computes the report req asks for from recs. Records are
// de-duplicated by deployment id within each Application (the first one
// wins). Records before
// req.From are not needed; successful deployments after req.To are used to
// find when a failure in range was restored, and are not counted otherwise.
func Deployments(recs []projector.Deployment, req Request) (Report, error) {
	if err := req.Validate(); err != nil {
		return Report{}, err
	}
	if len(recs) > math.MaxInt32 {
		return Report{}, fmt.Errorf("%w: %d records, more than %d", ErrTooMany, len(recs), math.MaxInt32)
	}
	from, to := req.From.UTC(), req.To.UTC()
	recs, req.Gaps, req.Health = oneApp(&req, recs)
	apps := byApp(recs)
	b := newBuilder(&req, from, to)
	for id, idx := range apps {
		b.walk(recs, id, idx)
		b.degraded(recs, id, idx)
	}
	out := Report{
		By: req.By, Label: req.Label, Bucket: req.Bucket, From: from, To: to,
		Gaps:    countGaps(recs, apps, &req, from, to),
		Ignored: b.ignored,
	}
	if req.Name != "" {
		out.App = req.Namespace + "/" + req.Name
	}
	out.CoveredFrom, out.CoveredTo = covered(&req, from, to)
	out.Rows = b.rows(out.CoveredFrom, out.CoveredTo)
	out.Totals, out.Applications = b.totals(out.Gaps, out.CoveredFrom, out.CoveredTo)
	return out, nil
}

// RecordedCommitTime is the commit time a deployment record carries
// (revisionCommittedAt: the spoke sets it when the change that asked for
// the revision named that commit), and whether it carries one.
func RecordedCommitTime(d projector.Deployment) (time.Time, bool) {
	if d.RevisionCommittedAt == nil {
		return time.Time{}, false
	}
	return *d.RevisionCommittedAt, true
}
