package read_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// scope is a read.Scope of a cluster label and projects.
type scope struct {
	env      string
	projects []string
}

func (s scope) Cluster(_ string, labels map[string]string) bool {
	return s.env == "" || labels["env"] == s.env
}
func (s scope) Project(p string) bool { return len(s.projects) == 0 || slices.Contains(s.projects, p) }
func (s scope) Limited() (bool, bool) { return s.env != "", len(s.projects) > 0 }

// TestScoped reads through read.Scoped with scopes of a cluster label and
// of a project: each row kind keeps only what is in scope, and an audit
// entry of an AppProject or repository named like an Application in scope
// is judged as what it is.
func TestScoped(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	reg := func(name, env string) projector.ClusterRow {
		return projector.ClusterRow{Name: name, Registration: &projector.ClusterRegistration{Cluster: name, Registered: true, Labels: map[string]string{"env": env}}}
	}
	app := func(cluster, name, project string) projector.AppRow {
		k := projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: name}
		return projector.AppRow{AppKey: k, Desired: &projector.AppDesired{AppKey: k, Project: project}}
	}
	entry := func(off int64, cluster, kind, name string) projector.AuditRow {
		return projector.AuditRow{AuditEntry: projector.AuditEntry{Topic: "config", Offset: off, At: at.Add(time.Duration(off) * time.Second),
			Cluster: cluster, Kind: kind, Namespace: "argocd", Name: name}}
	}
	q := &readtest.Query{
		ClusterRows: []projector.ClusterRow{reg("prod", "prod"), reg("staging", "staging")},
		AppRows:     []projector.AppRow{app("prod", "pay", "team-a"), app("staging", "shop", "team-a"), app("staging", "team-b", "team-a"), app("staging", "mail", "team-b")},
		AuditRows: []projector.AuditRow{
			entry(1, "prod", schemas.SubjectApplications, "pay"),
			entry(2, "staging", schemas.SubjectApplications, "mail"),
			// An AppProject team-b, named like team-a's Application team-b.
			entry(3, "staging", schemas.SubjectAppProjects, "team-b"),
			entry(4, "staging", schemas.SubjectRepositories, "shop"),
			entry(5, "", "api", "placements.apply"),
			entry(6, "staging", schemas.SubjectAppProjects, "team-a"),
		},
	}
	sq := read.Scoped(q)
	for _, tc := range []struct {
		name           string
		s              read.Scope
		clusters, apps []string
		audit          []int64
	}{
		{"unlimited", scope{}, []string{"prod", "staging"}, []string{"mail", "pay", "shop", "team-b"}, []int64{6, 5, 4, 3, 2, 1}},
		{"env=staging", scope{env: "staging"}, []string{"staging"}, []string{"mail", "shop", "team-b"}, []int64{6, 4, 3, 2}},
		{"project team-a", scope{projects: []string{"team-a"}}, []string{"prod", "staging"}, []string{"pay", "shop", "team-b"}, []int64{6, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := read.WithScope(context.Background(), tc.s)
			cs, err := sq.Clusters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var clusters []string
			for _, c := range cs {
				clusters = append(clusters, c.Name)
			}
			as, err := sq.Apps(ctx, projector.AppFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var apps []string
			for _, a := range as {
				apps = append(apps, a.Name)
			}
			slices.Sort(apps)
			es, err := sq.Audit(ctx, projector.AuditFilter{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var audit []int64
			for _, e := range es {
				audit = append(audit, e.Offset)
			}
			got := []any{clusters, apps, audit}
			if diff := cmp.Diff([]any{tc.clusters, tc.apps, tc.audit}, got); diff != "" {
				t.Errorf("clusters, apps, audit (-want +got):\n%s", diff)
			}
		})
	}
	if _, ok, err := sq.Cluster(read.WithScope(context.Background(), scope{env: "staging"}), "prod"); ok || err != nil {
		t.Errorf("a cluster out of scope = %v, %v; want not found", ok, err)
	}
}

// TestScopedEveryMethod reads each method of projector.Query through
// read.Scoped, from a store whose every row is about one cluster, with a
// scope that leaves that cluster out: each method must answer nothing,
// except the audit chains, which Scoped documents as not filtered. A
// method of the union with no case here fails the test, so that a new
// one is given a scope, and a test of it, when it is added.
func TestScopedEveryMethod(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	k := projector.AppKey{Cluster: "prod", Namespace: "argocd", Name: "pay"}
	res := schemas.Resource{Cluster: k.Cluster, Namespace: k.Namespace, Name: k.Name}
	q := &readtest.Query{
		ClusterRows: []projector.ClusterRow{{Name: "prod", Registration: &projector.ClusterRegistration{
			Cluster: "prod", Registered: true, Labels: map[string]string{"env": "prod"}}}},
		AppRows: []projector.AppRow{{AppKey: k, Desired: &projector.AppDesired{AppKey: k, Project: "team-a"}}},
		AuditRows: []projector.AuditRow{{AuditEntry: projector.AuditEntry{Topic: "config", At: at,
			Cluster: k.Cluster, Kind: schemas.SubjectApplications, Namespace: k.Namespace, Name: k.Name}}},
		DeploymentRows: []projector.Deployment{{DeploymentRecorded: schemas.DeploymentRecorded{Resource: res, FinishedAt: at, Project: "team-a"}}},
		GapRows:        []projector.Gap{{DeploymentGap: schemas.DeploymentGap{Resource: res}, At: at}},
		TargetRows:     []projector.Target{{AppKey: k, Placement: "pay", At: at}},
		HealthRows:     []projector.HealthChange{{AppKey: k, Health: "Healthy", At: at}},
	}
	sq := read.Scoped(q)
	all := projector.DeploymentFilter{}
	chain := projector.Partition{Topic: "config"}
	// count calls one method and counts the rows it returns.
	count := map[string]func(context.Context) (int, error){
		"Clusters":         func(ctx context.Context) (int, error) { r, err := sq.Clusters(ctx); return len(r), err },
		"ClusterSummaries": func(ctx context.Context) (int, error) { r, err := sq.ClusterSummaries(ctx); return len(r), err },
		"Cluster": func(ctx context.Context) (int, error) {
			_, ok, err := sq.Cluster(ctx, "prod")
			if ok {
				return 1, err
			}
			return 0, err
		},
		"Apps": func(ctx context.Context) (int, error) {
			r, err := sq.Apps(ctx, projector.AppFilter{})
			return len(r), err
		},
		"Audit": func(ctx context.Context) (int, error) {
			r, err := sq.Audit(ctx, projector.AuditFilter{})
			return len(r), err
		},
		"Chain":           func(ctx context.Context) (int, error) { r, err := sq.Chain(ctx, chain, -1, 10); return len(r), err },
		"ChainPartitions": func(ctx context.Context) (int, error) { r, err := sq.ChainPartitions(ctx); return len(r), err },
		"Deployments":     func(ctx context.Context) (int, error) { r, err := sq.Deployments(ctx, all); return len(r), err },
		"Gaps":            func(ctx context.Context) (int, error) { r, err := sq.Gaps(ctx, all); return len(r), err },
		"Targets":         func(ctx context.Context) (int, error) { r, err := sq.Targets(ctx, all); return len(r), err },
		"HealthChanges":   func(ctx context.Context) (int, error) { r, err := sq.HealthChanges(ctx, all); return len(r), err },
	}
	unfiltered := map[string]bool{"Chain": true, "ChainPartitions": true}
	free, limited := t.Context(), read.WithScope(t.Context(), scope{env: "staging"})
	union := reflect.TypeFor[projector.Query]()
	for i := range union.NumMethod() {
		name := union.Method(i).Name
		t.Run(name, func(t *testing.T) {
			call, ok := count[name]
			if !ok {
				t.Fatalf("projector.Query.%s has no case here: give it a scope in read.Scoped and a case in this test", name)
			}
			n, err := call(free)
			if err != nil || n == 0 {
				t.Fatalf("without a scope: %d rows, %v; want some", n, err)
			}
			want := 0
			if unfiltered[name] {
				want = n
			}
			if got, err := call(limited); err != nil || got != want {
				t.Errorf("with the cluster out of scope: %d rows, %v; want %d", got, err, want)
			}
		})
	}
	if len(count) != union.NumMethod() {
		t.Errorf("%d cases for the %d methods of projector.Query: remove the cases of methods it no longer has", len(count), union.NumMethod())
	}
}
