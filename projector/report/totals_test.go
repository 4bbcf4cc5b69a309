package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRatesOverTheSpanCovered: a rate divides by the span the records
// cover, from the first record (or From, where records predate it) to Now
// (or To), and by one day at least.
func TestRatesOverTheSpanCovered(t *testing.T) {
	now := jan(20, 1, 17) // 1h17m into the day
	recs := deps(
		rec{id: "a1", app: "c1/apps/a", at: jan(20, 0, 30)},
	)
	tests := []struct {
		name         string
		req          Request
		wantFrom     time.Time
		wantRowRate  float64
		wantTotal    float64
		wantCoverage time.Duration
	}{{
		// The day so far holds 1 deployment: it is 1 that day, not 18.7 a day.
		name:     "a part of a day is not extrapolated",
		req:      Request{By: ByCluster, Bucket: Day, From: jan(19, 0, 0), To: now, Since: jan(1, 0, 0)},
		wantFrom: jan(19, 0, 0), wantRowRate: 1, wantTotal: 1.0 / (25.0 + 17.0/60) * 24, wantCoverage: 25*time.Hour + 17*time.Minute,
	}, {
		name:     "a range ending after now covers up to now",
		req:      Request{By: ByCluster, Bucket: Day, From: jan(10, 0, 0), To: jan(21, 0, 0), Now: now, Since: jan(18, 1, 17)},
		wantFrom: jan(18, 1, 17), wantRowRate: 1, wantTotal: 0.5, wantCoverage: 48 * time.Hour,
	}, {
		name:     "records that start in the range cover from the first",
		req:      Request{By: ByCluster, Bucket: Week, From: jan(1, 0, 0), To: now, Since: jan(17, 1, 17)},
		wantFrom: jan(17, 1, 17), wantRowRate: 1.0 / 3, wantTotal: 1.0 / 3, wantCoverage: 72 * time.Hour,
	}, {
		name:     "no Since takes From",
		req:      Request{By: ByCluster, Bucket: Week, From: jan(16, 1, 17), To: now},
		wantFrom: jan(16, 1, 17), wantRowRate: 0.25, wantTotal: 0.25, wantCoverage: 96 * time.Hour,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Deployments(recs, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Rows) != 1 || len(got.Totals) != 1 {
				t.Fatalf("rows %+v, totals %+v", got.Rows, got.Totals)
			}
			approx := cmpopts.EquateApprox(0, 1e-9)
			if !got.CoveredFrom.Equal(tt.wantFrom) || got.CoveredTo.Sub(got.CoveredFrom) != tt.wantCoverage {
				t.Errorf("covers %s to %s, want from %s for %s", got.CoveredFrom, got.CoveredTo, tt.wantFrom, tt.wantCoverage)
			}
			if !cmp.Equal(got.Rows[0].PerDay, tt.wantRowRate, approx) {
				t.Errorf("row: %v per day, want %v", got.Rows[0].PerDay, tt.wantRowRate)
			}
			if !cmp.Equal(got.Totals[0].PerDay, tt.wantTotal, approx) {
				t.Errorf("total: %v per day, want %v", got.Totals[0].PerDay, tt.wantTotal)
			}
		})
	}
}

// TestTotalsPerApplication: grouped by app, the rows of one Application
// on several clusters sum to one Application total, which the totals per
// cluster drill down to, and a request naming it keeps only its records.
func TestTotalsPerApplication(t *testing.T) {
	recs := deps(
		rec{id: "e1", app: "eu/apps/web", rev: "r1", prev: "r0", at: jan(2, 10, 0)},
		rec{id: "e2", app: "eu/apps/web", rev: "r2", prev: "r1", phase: PhaseFailed, at: jan(3, 10, 0)},
		rec{id: "e3", app: "eu/apps/web", rev: "r2", prev: "r1", at: jan(3, 12, 0)},
		rec{id: "u1", app: "us/apps/web", rev: "r1", prev: "r0", at: jan(4, 9, 0)},
		rec{id: "u2", app: "us/apps/db", rev: "r1", prev: "r0", at: jan(4, 9, 0)},
	)
	req := Request{By: ByApp, Bucket: Day, From: jan(1, 0, 0), To: jan(5, 0, 0), Since: jan(1, 0, 0)}
	restore := &Durations{Count: 1, Median: 2 * time.Hour, P90: 2 * time.Hour, Mean: 2 * time.Hour}
	web := Total{Group: "apps/web", Clusters: 2, Deployments: 3, Failures: 1, PerDay: 0.75, ChangeFailureRate: 0.25,
		TimeToRestore: restore, LeadTimeUnknown: 3}
	euWeb := Total{Group: "eu/apps/web", Clusters: 1, Deployments: 2, Failures: 1, PerDay: 0.5, ChangeFailureRate: 1.0 / 3,
		TimeToRestore: restore, LeadTimeUnknown: 2}
	usWeb := Total{Group: "us/apps/web", Clusters: 1, Deployments: 1, PerDay: 0.25, LeadTimeUnknown: 1}
	usDB := Total{Group: "us/apps/db", Clusters: 1, Deployments: 1, PerDay: 0.25, LeadTimeUnknown: 1}

	got, err := Deployments(recs, req)
	if err != nil {
		t.Fatal(err)
	}
	db := usDB
	db.Group = "apps/db"
	if diff := cmp.Diff([]Total{db, web}, got.Applications); diff != "" {
		t.Errorf("applications (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Total{euWeb, usDB, usWeb}, got.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}

	req.Namespace, req.Name = "apps", "web"
	got, err = Deployments(recs, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Total{euWeb, usWeb}, got.Totals); diff != "" || got.App != "apps/web" {
		t.Errorf("app %q, totals (-want +got):\n%s", got.App, diff)
	}
	if diff := cmp.Diff([]Total{web}, got.Applications); diff != "" {
		t.Errorf("applications (-want +got):\n%s", diff)
	}
}

// TestWords: the span and the frequency read as `argosy report` and the
// dashboard both write them.
func TestWords(t *testing.T) {
	for _, tt := range []struct {
		n      int
		perDay float64
		span   time.Duration
		want   string
	}{
		{1, 1, 77 * time.Minute, "1 in 1h 17m"},
		{3, 3, 5*time.Hour + 12*time.Minute, "3 in 5h 12m"},
		{0, 0, 0, "0 in 0m"},
		{5, 5.0 / 7, 7 * day, "0.71"},
		{2, 2, day, "2.00"},
	} {
		if got := Frequency(tt.n, tt.perDay, tt.span); got != tt.want {
			t.Errorf("Frequency(%d, %v, %s) = %q, want %q", tt.n, tt.perDay, tt.span, got, tt.want)
		}
	}
	if got := Span(3*day + 4*time.Hour + 59*time.Minute); got != "3d 4h" {
		t.Errorf("Span: %q", got)
	}
	r := Report{From: jan(1, 0, 0), To: jan(20, 12, 0), CoveredFrom: jan(20, 7, 0), CoveredTo: jan(20, 12, 17),
		Totals: []Total{{Deployments: 2}, {Deployments: 1}}}
	if got, want := r.Summary(), "3 deployments over 5h 17m (2024-01-20 07:00 to 2024-01-20 12:17 UTC)."; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	r.CoveredFrom = jan(18, 12, 17)
	if got, want := r.Summary(), "3 deployments over 2d (2024-01-18 12:17 to 2024-01-20 12:17 UTC): 1.50 per day."; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}
