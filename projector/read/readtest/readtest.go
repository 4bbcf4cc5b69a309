// Package readtest holds a test double of the read API's store: Query, an
// in-memory projector.Query over rows a test sets, and Fleet, a small fleet
// of three clusters with a valid audit chain. They are for tests of package
// read and of its clients; the real views come from a projector.Store.
package readtest

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// Query is a projector.Query over rows held in memory. Its filters follow
// the interface's documentation: empty fields match all, From is inclusive
// and To exclusive. Set the fields before serving; it is not safe to change
// them while requests are served.
type Query struct {
	ClusterRows []projector.ClusterRow
	AppRows     []projector.AppRow
	// AuditRows are the audit history as Audit returns it, with actors and
	// results joined in.
	AuditRows []projector.AuditRow
	// Entries are the audit entries as stored, which Chain and
	// ChainPartitions read; nil means AuditRows' entries.
	Entries        []projector.AuditEntry
	DeploymentRows []projector.Deployment
	GapRows        []projector.Gap
	TargetRows     []projector.Target
	HealthRows     []projector.HealthChange
	// Err, when set, is returned by every method.
	Err error
}

var _ projector.Query = (*Query)(nil)

// Clusters returns the clusters by name.
func (q *Query) Clusters(context.Context) ([]projector.ClusterRow, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	out := slices.Clone(q.ClusterRows)
	slices.SortFunc(out, func(a, b projector.ClusterRow) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// ClusterSummaries returns the clusters by name, in brief.
func (q *Query) ClusterSummaries(ctx context.Context) ([]projector.ClusterSummary, error) {
	rows, err := q.Clusters(ctx)
	out := make([]projector.ClusterSummary, len(rows))
	for i, c := range rows {
		out[i] = c.Summary()
	}
	return out, err
}

// Cluster returns the cluster named name.
func (q *Query) Cluster(_ context.Context, name string) (projector.ClusterRow, bool, error) {
	if q.Err != nil {
		return projector.ClusterRow{}, false, q.Err
	}
	for _, c := range q.ClusterRows {
		if c.Name == name {
			return c, true, nil
		}
	}
	return projector.ClusterRow{}, false, nil
}

// Apps returns the Applications that match f by cluster, namespace and name.
func (q *Query) Apps(_ context.Context, f projector.AppFilter) ([]projector.AppRow, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.AppRow
	for _, a := range q.AppRows {
		if match(f.Cluster, a.Cluster) && match(f.Namespace, a.Namespace) && match(f.Name, a.Name) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b projector.AppRow) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Audit returns the entries that match f, newest first.
func (q *Query) Audit(_ context.Context, f projector.AuditFilter) ([]projector.AuditRow, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.AuditRow
	for _, a := range q.AuditRows {
		if match(f.Cluster, a.Cluster) && match(f.Namespace, a.Namespace) && match(f.Name, a.Name) &&
			match(f.Actor, a.Actor) && (f.From.IsZero() || !a.At.Before(f.From)) && (f.To.IsZero() || a.At.Before(f.To)) &&
			(!f.Changes || !changedNothing(a)) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b projector.AuditRow) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(b.Offset, a.Offset))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// Chain returns p's entries after offset after, in offset order, at most
// limit.
func (q *Query) Chain(_ context.Context, p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.AuditEntry
	for _, e := range q.entries() {
		if e.Topic == p.Topic && e.Partition == p.Partition && e.Offset > after {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b projector.AuditEntry) int { return cmp.Compare(a.Offset, b.Offset) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ChainPartitions returns the partitions that have audit entries, by topic
// and partition.
func (q *Query) ChainPartitions(context.Context) ([]projector.Partition, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.Partition
	for _, e := range q.entries() {
		p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b projector.Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

func (q *Query) entries() []projector.AuditEntry {
	if q.Entries != nil {
		return q.Entries
	}
	out := make([]projector.AuditEntry, len(q.AuditRows))
	for i, a := range q.AuditRows {
		out[i] = a.AuditEntry
	}
	return out
}

// Deployments returns the records that match f, by finish time.
func (q *Query) Deployments(_ context.Context, f projector.DeploymentFilter) ([]projector.Deployment, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.Deployment
	for _, d := range q.DeploymentRows {
		if match(f.Cluster, d.Cluster) && match(f.Project, d.Project) && match(f.Namespace, d.Namespace) &&
			match(f.Name, d.Name) && (f.From.IsZero() || !d.FinishedAt.Before(f.From)) &&
			(f.To.IsZero() || d.FinishedAt.Before(f.To)) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b projector.Deployment) int { return a.FinishedAt.Compare(b.FinishedAt) })
	if f.Last > 0 && len(out) > f.Last {
		out = out[len(out)-f.Last:]
	}
	return out, nil
}

// Gaps returns the gaps of f's cluster (all if none).
func (q *Query) Gaps(_ context.Context, f projector.DeploymentFilter) ([]projector.Gap, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []projector.Gap
	for _, g := range q.GapRows {
		if match(f.Cluster, g.Cluster) {
			out = append(out, g)
		}
	}
	return out, nil
}

// Targets returns the placement targets that match f, by time.
func (q *Query) Targets(_ context.Context, f projector.DeploymentFilter) ([]projector.Target, error) {
	return timed(q, f, q.TargetRows, func(t projector.Target) (projector.AppKey, time.Time) { return t.AppKey, t.At })
}

// HealthChanges returns the health changes that match f, by time.
func (q *Query) HealthChanges(_ context.Context, f projector.DeploymentFilter) ([]projector.HealthChange, error) {
	return timed(q, f, q.HealthRows, func(h projector.HealthChange) (projector.AppKey, time.Time) { return h.AppKey, h.At })
}

// timed returns the rows that match f's Application and time span, by
// time: the append-only tables' query.
func timed[T any](q *Query, f projector.DeploymentFilter, rows []T, at func(T) (projector.AppKey, time.Time)) ([]T, error) {
	if q.Err != nil {
		return nil, q.Err
	}
	var out []T
	for _, r := range rows {
		k, t := at(r)
		if match(f.Cluster, k.Cluster) && match(f.Namespace, k.Namespace) && match(f.Name, k.Name) &&
			(f.From.IsZero() || !t.Before(f.From)) && (f.To.IsZero() || t.Before(f.To)) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b T) int {
		_, ta := at(a)
		_, tb := at(b)
		return ta.Compare(tb)
	})
	return out, nil
}

func match(want, got string) bool { return want == "" || want == got }

// changedNothing reports whether a is an API call's record that was
// allowed and appended no event, as the store tells from the call.
func changedNothing(a projector.AuditRow) bool {
	var rec struct {
		Outcome  string   `json:"outcome"`
		EventIDs []string `json:"eventIds"`
	}
	return a.Kind == "api" && json.Unmarshal(a.After, &rec) == nil && rec.Outcome == "allowed" && len(rec.EventIDs) == 0
}
