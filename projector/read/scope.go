package read

import (
	"context"
	"fmt"
	"slices"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// Scope is what one caller may read: the clusters and the projects its
// credential is limited to. The hub puts the caller's scope in each
// request's context (WithScope); Handler and the dashboard read through
// Scoped, so every route and page shows only what is in scope.
type Scope interface {
	// Cluster reports whether a cluster with these labels is in scope.
	Cluster(name string, labels map[string]string) bool
	// Project reports whether an Application of this project is in scope.
	Project(project string) bool
	// Limited reports which limits the scope has.
	Limited() (clusters, projects bool)
}

type scopeKey struct{}

// WithScope returns ctx carrying the caller's scope.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf returns the scope ctx carries, if it limits anything.
func scopeOf(ctx context.Context) (Scope, bool, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	if !ok || s == nil {
		return nil, false, false
	}
	c, p := s.Limited()
	return s, c, p
}

// Scoped returns q limited, call by call, to the scope the call's context
// carries (WithScope); without one it is q. Rows about a cluster out of
// scope, or about an Application of a project out of scope, are left out:
// clusters and their summaries, Applications, audit entries, deployment
// records, gaps, placement targets and health changes, and so every view
// and report made from them. For a token limited to projects, audit
// entries are kept only about its projects' Applications and its
// AppProjects; for a token limited to clusters, entries about no cluster
// are left out. The audit chains (Chain, ChainPartitions)
// are not filtered: verifying them shows hashes and verdicts only.
func Scoped(q projector.Query) projector.Query {
	if _, ok := q.(scoped); ok {
		return q
	}
	return scoped{src: q}
}

// scoped holds the Query it filters as a field, not embedded, so that a
// method added to projector.Query does not pass through unfiltered: scoped
// stops compiling until it decides what the method's scope is.
type scoped struct{ src projector.Query }

// inScope answers whether rows about one Application are in the scope.
type inScope struct {
	s                  Scope
	clusters, projects bool
	labels             map[string]map[string]string
	apps               map[projector.AppKey]string
}

// scopeFor reads what deciding the scope of rows takes: the clusters'
// labels, and, for a scope of projects when rows do not carry their
// Application's project (withApps), every Application's project.
func (q scoped) scopeFor(ctx context.Context, withApps bool) (*inScope, error) {
	s, c, p := scopeOf(ctx)
	if s == nil || !c && !p {
		return nil, nil
	}
	in := &inScope{s: s, clusters: c, projects: p, labels: map[string]map[string]string{}}
	if c {
		sums, err := q.src.ClusterSummaries(ctx)
		if err != nil {
			return nil, err
		}
		for _, cs := range sums {
			if cs.Registration != nil {
				in.labels[cs.Name] = cs.Registration.Labels
			}
		}
	}
	if p && withApps {
		rows, err := q.src.Apps(ctx, projector.AppFilter{})
		if err != nil {
			return nil, fmt.Errorf("scope: %w", err)
		}
		in.apps = make(map[projector.AppKey]string, len(rows))
		for _, a := range rows {
			if a.Desired != nil {
				in.apps[a.AppKey] = a.Desired.Project
			}
		}
	}
	return in, nil
}

func (in *inScope) cluster(name string) bool {
	if !in.clusters {
		return true
	}
	l, ok := in.labels[name]
	return ok && in.s.Cluster(name, l)
}

// app reports whether rows about Application k, of project (or, when
// project is "", the project the desired state gives it), are in scope.
func (in *inScope) app(k projector.AppKey, project string) bool {
	if !in.cluster(k.Cluster) {
		return false
	}
	if !in.projects {
		return true
	}
	if project == "" {
		project = in.apps[k]
	}
	return project != "" && in.s.Project(project)
}

// keep filters rows with in, or passes them all without a scope.
func keep[T any](in *inScope, rows []T, ok func(*inScope, T) bool) []T {
	if in == nil {
		return rows
	}
	return slices.DeleteFunc(rows, func(r T) bool { return !ok(in, r) })
}

func (q scoped) Clusters(ctx context.Context) ([]projector.ClusterRow, error) {
	in, err := q.scopeFor(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.Clusters(ctx)
	return keep(in, rows, func(in *inScope, r projector.ClusterRow) bool { return in.cluster(r.Name) }), err
}

func (q scoped) Cluster(ctx context.Context, name string) (projector.ClusterRow, bool, error) {
	in, err := q.scopeFor(ctx, false)
	if err != nil {
		return projector.ClusterRow{}, false, err
	}
	if in != nil && !in.cluster(name) {
		return projector.ClusterRow{}, false, nil
	}
	return q.src.Cluster(ctx, name)
}

func (q scoped) ClusterSummaries(ctx context.Context) ([]projector.ClusterSummary, error) {
	in, err := q.scopeFor(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.ClusterSummaries(ctx)
	return keep(in, rows, func(in *inScope, r projector.ClusterSummary) bool { return in.cluster(r.Name) }), err
}

func (q scoped) Apps(ctx context.Context, f projector.AppFilter) ([]projector.AppRow, error) {
	in, err := q.scopeFor(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.Apps(ctx, f)
	return keep(in, rows, func(in *inScope, r projector.AppRow) bool {
		project := ""
		if r.Desired != nil {
			project = r.Desired.Project
		}
		return in.app(r.AppKey, project)
	}), err
}

// scopedAuditFetch is how many more entries than asked for an audit page
// of a limited caller reads, to fill the page after filtering: a page may
// come out shorter when fewer than one in ten entries are in scope.
const scopedAuditFetch = 10

func (q scoped) Audit(ctx context.Context, f projector.AuditFilter) ([]projector.AuditRow, error) {
	in, err := q.scopeFor(ctx, true)
	if err != nil || in == nil {
		if err != nil {
			return nil, err
		}
		return q.src.Audit(ctx, f)
	}
	limit := f.Limit
	if f.Limit > 0 {
		f.Limit *= scopedAuditFetch
	}
	rows, err := q.src.Audit(ctx, f)
	rows = keep(in, rows, func(in *inScope, r projector.AuditRow) bool {
		if r.Cluster == "" || !in.cluster(r.Cluster) {
			return false
		}
		if !in.projects {
			return true
		}
		// By the entry's kind: an AppProject or repository may share an
		// Application's namespace and name.
		switch r.Kind {
		case schemas.SubjectApplications:
			return in.app(projector.AppKey{Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name}, "")
		case schemas.SubjectAppProjects:
			return in.s.Project(r.Name)
		}
		return false
	})
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, err
}

func (q scoped) Deployments(ctx context.Context, f projector.DeploymentFilter) ([]projector.Deployment, error) {
	in, err := q.scopeFor(ctx, true)
	if err != nil {
		return nil, err
	}
	last := f.Last
	if in != nil {
		f.Last = 0 // filtered first, then the newest kept
	}
	rows, err := q.src.Deployments(ctx, f)
	rows = keep(in, rows, func(in *inScope, d projector.Deployment) bool {
		return in.app(projector.AppKey{Cluster: d.Cluster, Namespace: d.Namespace, Name: d.Name}, d.Project)
	})
	if in != nil && last > 0 && len(rows) > last {
		rows = rows[len(rows)-last:]
	}
	return rows, err
}

func (q scoped) Gaps(ctx context.Context, f projector.DeploymentFilter) ([]projector.Gap, error) {
	in, err := q.scopeFor(ctx, true)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.Gaps(ctx, f)
	return keep(in, rows, func(in *inScope, g projector.Gap) bool {
		return in.app(projector.AppKey{Cluster: g.Cluster, Namespace: g.Namespace, Name: g.Name}, "")
	}), err
}

func (q scoped) Targets(ctx context.Context, f projector.DeploymentFilter) ([]projector.Target, error) {
	in, err := q.scopeFor(ctx, true)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.Targets(ctx, f)
	return keep(in, rows, func(in *inScope, t projector.Target) bool { return in.app(t.AppKey, "") }), err
}

func (q scoped) HealthChanges(ctx context.Context, f projector.DeploymentFilter) ([]projector.HealthChange, error) {
	in, err := q.scopeFor(ctx, true)
	if err != nil {
		return nil, err
	}
	rows, err := q.src.HealthChanges(ctx, f)
	return keep(in, rows, func(in *inScope, h projector.HealthChange) bool { return in.app(h.AppKey, "") }), err
}

// Chain is not filtered (see Scoped).
func (q scoped) Chain(ctx context.Context, p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error) {
	return q.src.Chain(ctx, p, after, limit)
}

// ChainPartitions is not filtered (see Scoped).
func (q scoped) ChainPartitions(ctx context.Context) ([]projector.Partition, error) {
	return q.src.ChainPartitions(ctx)
}
