package read_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// appsFleet is readtest.Fleet's clusters (prod-eu Connected, prod-us
// Stale, staging Unknown) with these Applications:
//   - guestbook: Converged on prod-eu at rev a, Stale on prod-us at rev b,
//     never reported on staging (Unknown, so Stale too);
//   - billing (project payments, label tier=1): rejected on prod-eu;
//   - api: Degraded (so Failed) on prod-eu, deleted on prod-us;
//   - web: Progressing on prod-eu.
func appsFleet() *readtest.Query {
	q := readtest.Fleet()
	spec := func(rev string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"project":"web","source":{"repoURL":"https://git.example/apps.git","path":"guestbook","targetRevision":%q}}`, rev))
	}
	row := func(cluster, name string, gen, applied int64, sync, health, rev string) projector.AppRow {
		key := projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: name}
		r := projector.AppRow{AppKey: key, Desired: &projector.AppDesired{AppKey: key, Project: "web", Generation: gen, Spec: spec("main"),
			UpdatedAt: readtest.Now().Add(-time.Duration(gen) * time.Minute)}}
		if applied > 0 {
			r.Observed = &projector.AppObserved{AppKey: key, AppliedGeneration: applied, Sync: &schemas.SyncStatus{Status: sync, Revision: rev},
				Health: &schemas.HealthStatus{Status: health}}
		}
		return r
	}
	billing := row("prod-eu", "billing", 5, 4, "OutOfSync", "Healthy", "c")
	billing.Desired.Project, billing.Desired.Labels = "payments", map[string]string{"tier": "1"}
	billing.Observed.Rejected = &projector.Rejection{Generation: 5, Code: schemas.RejectInvalid}
	degraded := row("prod-eu", "api", 2, 2, "Synced", "Degraded", "a")
	gone := row("prod-us", "api", 3, 3, "Synced", "Healthy", "a")
	gone.Desired.Deleted = true
	q.AppRows = []projector.AppRow{
		row("prod-eu", "guestbook", 3, 3, "Synced", "Healthy", "a"),
		row("prod-us", "guestbook", 2, 2, "Synced", "Healthy", "b"),
		row("staging", "guestbook", 1, 0, "", "", ""),
		billing, degraded, gone,
		row("prod-eu", "web", 1, 1, "OutOfSync", "Progressing", "a"),
	}
	q.ClusterRows[2].Registration.Labels = map[string]string{"env": "staging"}
	return q
}

func TestListApps(t *testing.T) {
	q := appsFleet()
	tests := []struct {
		name    string
		req     read.AppsRequest
		want    []string
		wantErr string
	}{
		{name: "all", want: []string{"api", "billing", "guestbook", "web"}},
		{name: "search", req: read.AppsRequest{Search: "book"}, want: []string{"guestbook"}},
		{name: "project", req: read.AppsRequest{Project: "payments"}, want: []string{"billing"}},
		{name: "label", req: read.AppsRequest{Selector: "tier=1"}, want: []string{"billing"}},
		{name: "sync", req: read.AppsRequest{Sync: "OutOfSync"}, want: []string{"billing", "web"}},
		{name: "health", req: read.AppsRequest{Health: "Degraded"}, want: []string{"api"}},
		{name: "stale", req: read.AppsRequest{State: read.AppStale}, want: []string{"guestbook"}},
		{name: "failed", req: read.AppsRequest{State: read.AppFailed}, want: []string{"api", "billing"}},
		{name: "not converged", req: read.AppsRequest{State: read.AppNotConverged}, want: []string{"api", "billing", "guestbook", "web"}},
		{name: "converged", req: read.AppsRequest{State: read.AppConverged}, want: []string{"guestbook"}},
		{name: "page 2", req: read.AppsRequest{PerPage: 3, Page: 2}, want: []string{"web"}},
		{name: "bad state", req: read.AppsRequest{State: "Green"}, wantErr: `state "Green"`},
		{name: "bad selector", req: read.AppsRequest{Selector: "tier in ("}, wantErr: "selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := read.ListApps(t.Context(), q, tt.req, readtest.Now(), 30*time.Second)
			if tt.wantErr != "" {
				if err == nil || !contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, s := range p.Items {
				got = append(got, s.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestListAppsSummary checks one Application's counts, source, revisions
// and grid.
func TestListAppsSummary(t *testing.T) {
	p, err := read.ListApps(t.Context(), appsFleet(), read.AppsRequest{Search: "guestbook", GridBy: "env"}, readtest.Now(), 30*time.Second)
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("%v, %+v", err, p)
	}
	want := read.AppSummary{Namespace: "argocd", Name: "guestbook", Project: "web",
		Source:   &read.AppSource{RepoURL: "https://git.example/apps.git", Path: "guestbook", TargetRevision: "main"},
		Clusters: 3, Counts: map[string]int{read.AppConverged: 1, read.AppStale: 2},
		Revisions: []read.RevisionCount{{Revision: "a", Clusters: 1}, {Revision: "b", Clusters: 1}},
		ByLabel:   map[string][]read.RevisionCount{"prod": {{Revision: "a", Clusters: 1}, {Revision: "b", Clusters: 1}}},
	}
	if diff := cmp.Diff(want, p.Items[0]); diff != "" || !cmp.Equal(p.Columns, []string{"prod"}) {
		t.Errorf("(-want +got):\n%s\ncolumns %q", diff, p.Columns)
	}
}

func TestAppStateOf(t *testing.T) {
	failed := &schemas.OperationState{Phase: schemas.OperationPhaseFailed}
	app := func(gen, applied int64, sync, health string, op *schemas.OperationState, stale bool) read.App {
		a := read.App{AppRow: projector.AppRow{Desired: &projector.AppDesired{Generation: gen}}, Stale: stale}
		if applied >= 0 {
			a.Observed = &projector.AppObserved{AppliedGeneration: applied, Sync: &schemas.SyncStatus{Status: sync},
				Health: &schemas.HealthStatus{Status: health}, Operation: op}
		}
		return a
	}
	rejected := app(2, 1, "Synced", "Healthy", nil, false)
	rejected.Observed.Rejected = &projector.Rejection{Generation: 2}
	oldRejection := app(3, 1, "Synced", "Healthy", nil, false)
	oldRejection.Observed.Rejected = &projector.Rejection{Generation: 2}
	for _, tc := range []struct {
		name string
		a    read.App
		want string
	}{
		{"not wanted", read.App{}, ""},
		{"never reported", app(1, -1, "", "", nil, false), read.AppPending},
		{"behind", app(2, 1, "Synced", "Healthy", nil, false), read.AppPending},
		{"rejected", rejected, read.AppFailed},
		{"a rejection of an older generation", oldRejection, read.AppPending},
		{"stale beats all", app(1, 1, "Synced", "Healthy", nil, true), read.AppStale},
		{"sync failed", app(1, 1, "OutOfSync", "Healthy", failed, false), read.AppFailed},
		{"degraded", app(1, 1, "Synced", "Degraded", nil, false), read.AppFailed},
		{"converged", app(1, 1, "Synced", "Healthy", nil, false), read.AppConverged},
		{"progressing", app(1, 1, "OutOfSync", "Progressing", nil, false), read.AppProgressing},
	} {
		if got := read.AppStateOf(tc.a); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
