package read_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

func TestListFleet(t *testing.T) {
	q := readtest.Fleet()
	tests := []struct {
		name      string
		req       read.FleetRequest
		want      []string
		total     int
		pages     int
		wantErr   string
		wantCount map[string]int
	}{
		{name: "all", want: []string{"prod-eu", "prod-us", "staging"}, total: 3, pages: 1,
			wantCount: map[string]int{read.StateConnected: 1, read.StateStale: 1, read.StateUnknown: 1}},
		{name: "selector", req: read.FleetRequest{Selector: "env=prod"}, want: []string{"prod-eu", "prod-us"}, total: 2, pages: 1},
		{name: "stale", req: read.FleetRequest{State: read.StateStale}, want: []string{"prod-us"}, total: 1, pages: 1},
		{name: "search", req: read.FleetRequest{Search: "-u"}, want: []string{"prod-us"}, total: 1, pages: 1},
		{name: "by heartbeat, newest first", req: read.FleetRequest{Sort: "-heartbeat"}, want: []string{"prod-eu", "prod-us", "staging"}, total: 3, pages: 1},
		{name: "by heartbeat", req: read.FleetRequest{Sort: "heartbeat"}, want: []string{"staging", "prod-us", "prod-eu"}, total: 3, pages: 1},
		{name: "page 2 of 2", req: read.FleetRequest{PerPage: 2, Page: 2}, want: []string{"staging"}, total: 3, pages: 2},
		{name: "page past the end is the last", req: read.FleetRequest{PerPage: 2, Page: 9}, want: []string{"staging"}, total: 3, pages: 2},
		{name: "nothing matches", req: read.FleetRequest{Selector: "env=nope"}, want: []string{}, total: 0, pages: 1},
		{name: "bad selector", req: read.FleetRequest{Selector: "env in ("}, wantErr: "selector"},
		{name: "bad state", req: read.FleetRequest{State: "Green"}, wantErr: `state "Green"`},
		{name: "bad sort", req: read.FleetRequest{Sort: "color"}, wantErr: `sort "color"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := read.ListFleet(t.Context(), q, tt.req, readtest.Now(), 30*time.Second)
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
			for _, c := range p.Items {
				got = append(got, c.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || p.Total != tt.total || p.Pages != tt.pages {
				t.Errorf("names (-want +got):\n%s\ntotal %d pages %d, want %d %d", diff, p.Total, p.Pages, tt.total, tt.pages)
			}
			if tt.wantCount != nil {
				if diff := cmp.Diff(tt.wantCount, p.Counts); diff != "" {
					t.Errorf("counts (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// countingQuery counts the clusters read in full.
type countingQuery struct {
	*readtest.Query
	full []string
}

func (q *countingQuery) Cluster(ctx context.Context, name string) (projector.ClusterRow, bool, error) {
	q.full = append(q.full, name)
	return q.Query.Cluster(ctx, name)
}

// TestListFleetReadsOnlyThePage checks that a page reads in full only the
// clusters it shows, whatever the fleet's size.
func TestListFleetReadsOnlyThePage(t *testing.T) {
	q := &countingQuery{Query: readtest.Fleet()}
	p, err := read.ListFleet(t.Context(), q, read.FleetRequest{PerPage: 1, Page: 2}, readtest.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || !slices.Equal(q.full, []string{p.Items[0].Name}) {
		t.Errorf("page %v read in full %v", p.Items, q.full)
	}
}

// TestListFleetOnSQLite pages a seeded fleet in the SQLite store, whose
// summaries and full rows must agree on every cluster of the page.
func TestListFleetOnSQLite(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := readtest.Now()
	if err := readtest.Seed(ctx, s, readtest.Large{Clusters: 300, AppsPerCluster: 3, Now: now}); err != nil {
		t.Fatal(err)
	}
	p, err := read.ListFleet(ctx, s, read.FleetRequest{Selector: "env=prod,region in (eu,us)", State: read.StateStale, PerPage: 3, Page: 2}, now, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Clusters c%10 == 9 are Stale; env=prod is c%3 == 0; region eu/us is (c/3)%3 < 2.
	want := 0
	for c := range 300 {
		if c%10 == 9 && c%3 == 0 && (c/3)%3 < 2 {
			want++
		}
	}
	if p.Total != want || len(p.Items) != min(3, want-3) {
		t.Fatalf("total %d items %d, want %d and %d", p.Total, len(p.Items), want, min(3, want-3))
	}
	for _, c := range p.Items {
		if c.State != read.StateStale || c.Applications != 3 || c.Registration.Labels["env"] != "prod" {
			t.Errorf("%s: state %s apps %d labels %v", c.Name, c.State, c.Applications, c.Registration.Labels)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
