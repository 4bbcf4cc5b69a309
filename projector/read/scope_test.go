package read_test

import (
	"context"
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
