package report

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// jan returns an instant of January 2024, whose 1st is a Monday: the ISO
// weeks start on the 1st, 8th, 15th, 22nd and 29th.
func jan(day, hour, minute int) time.Time {
	return time.Date(2024, time.January, day, hour, minute, 0, 0, time.UTC)
}

// rec is a deployment record in short: app is "cluster/namespace/name",
// uid defaults to "uid-<name>", rev to "rev-<id>", phase to Succeeded.
type rec struct {
	id, app, uid, phase string
	at                  time.Time
	rev, prev, project  string
	labels              map[string]string
	history             int64
	unchanged           bool
}

func deps(rs ...rec) []projector.Deployment {
	out := make([]projector.Deployment, 0, len(rs))
	for _, r := range rs {
		parts := strings.SplitN(r.app, "/", 3)
		d := projector.Deployment{EventID: "ev-" + r.id, DeploymentRecorded: schemas.DeploymentRecorded{
			Resource:     schemas.Resource{Cluster: parts[0], Namespace: parts[1], Name: parts[2]},
			DeploymentID: r.id, Revision: r.rev, PreviousRevision: r.prev, Phase: r.phase,
			StartedAt: r.at.Add(-time.Minute), FinishedAt: r.at,
			Project: r.project, Labels: r.labels, AppUID: r.uid, Unchanged: r.unchanged,
		}}
		if d.AppUID == "" {
			d.AppUID = "uid-" + parts[2]
		}
		if d.Revision == "" {
			d.Revision = "rev-" + r.id
		}
		if d.Phase == "" {
			d.Phase = PhaseSucceeded
		}
		if r.history != 0 {
			d.HistoryID = &r.history
		}
		out = append(out, d)
	}
	return out
}

// ignoreTotals leaves out of a comparison what TestRatesOverTheSpanCovered
// and TestTotalsPerApplication check: the span covered and the totals.
var ignoreTotals = cmpopts.IgnoreFields(Report{}, "CoveredFrom", "CoveredTo", "Totals", "Applications")

func weekOf(day int) (time.Time, time.Time) { return jan(day, 0, 0), jan(day+7, 0, 0) }
func dayOf(day int) (time.Time, time.Time)  { return jan(day, 0, 0), jan(day+1, 0, 0) }

func row(group string, bucket func(int) (time.Time, time.Time), day int, r Row) Row {
	r.Group = group
	r.Start, r.End = bucket(day)
	return r
}

func TestDeployments(t *testing.T) {
	commits := map[string]time.Time{
		"r1": jan(2, 11, 0), "r2": jan(3, 10, 0), "r3": jan(4, 8, 0),
		"r5": jan(5, 14, 0), // after its deployment finished: impossible, so unknown
	}
	commitTime := func(d projector.Deployment) (time.Time, bool) {
		c, ok := commits[d.Revision]
		return c, ok
	}
	week := func(by GroupBy, from, to time.Time) Request {
		return Request{By: by, Bucket: Week, From: from, To: to}
	}
	tests := []struct {
		name string
		recs []projector.Deployment
		req  Request
		want []Row
		// ignored is Report.Ignored.
		ignored int
	}{{
		name: "ISO weeks start on Monday at 00:00 UTC and the range is half-open",
		recs: deps(
			rec{id: "a0", app: "c1/apps/a", at: time.Date(2023, 12, 31, 23, 59, 0, 0, time.UTC)}, // before From
			rec{id: "a1", app: "c1/apps/a", at: jan(7, 23, 59)},                                  // Sunday: week of the 1st
			rec{id: "a2", app: "c1/apps/a", at: jan(8, 0, 0)},                                    // Monday: week of the 8th
			rec{id: "a3", app: "c1/apps/a", at: jan(14, 23, 59)},                                 // Sunday: week of the 8th
			rec{id: "a4", app: "c1/apps/a", at: jan(15, 0, 0)},                                   // To itself: out
		),
		req: week(ByApp, jan(1, 0, 0), jan(15, 0, 0)),
		want: []Row{
			// a1: 1 deployment over 7 days; a new revision, commit time unknown.
			row("c1/apps/a", weekOf, 1, Row{Deployments: 1, PerDay: 1.0 / 7, LeadTimeUnknown: 1}),
			// a2, a3.
			row("c1/apps/a", weekOf, 8, Row{Deployments: 2, PerDay: 2.0 / 7, LeadTimeUnknown: 2}),
		},
	}, {
		name: "a failure restored in the next day counts in the failure's day",
		recs: deps(
			rec{id: "f1", app: "c1/apps/a", phase: PhaseFailed, at: jan(2, 22, 0)},
			rec{id: "s1", app: "c1/apps/a", at: jan(3, 1, 30)},
		),
		req: Request{By: ByApp, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0)},
		want: []Row{
			// f1: 0 of 1 sync succeeded, CFR 1/1; restored by s1 after
			// 22:00 → 01:30 = 3h30m.
			row("c1/apps/a", dayOf, 2, Row{Failures: 1, ChangeFailureRate: 1,
				TimeToRestore: &Durations{Count: 1, Median: 3*time.Hour + 30*time.Minute, P90: 3*time.Hour + 30*time.Minute, Mean: 3*time.Hour + 30*time.Minute}}),
			// s1: 1 deployment in 1 day.
			row("c1/apps/a", dayOf, 3, Row{Deployments: 1, PerDay: 1, LeadTimeUnknown: 1}),
		},
	}, {
		name: "restores after the range count, a re-created Application does not restore, unrestored failures count apart",
		recs: deps(
			// a: Error on Friday the 5th 10:00, restored on Tuesday the
			// 9th 12:00, after To: 4 days 2 hours = 98h.
			rec{id: "fa1", app: "c1/apps/a", phase: PhaseError, at: jan(5, 10, 0)},
			rec{id: "sa1", app: "c1/apps/a", at: jan(9, 12, 0)},
			// b: fails, then is deleted and created anew (new uid) and
			// deploys: that is another Application, so fb1 is unrestored.
			rec{id: "fb1", app: "c1/apps/b", uid: "ub-old", phase: PhaseFailed, at: jan(6, 8, 0)},
			rec{id: "sb1", app: "c1/apps/b", uid: "ub-new", at: jan(6, 9, 0)},
			// c: two failures in a row, each restored by sc1: 12h and 6h.
			rec{id: "fc1", app: "c1/apps/c", phase: PhaseFailed, at: jan(3, 0, 0)},
			rec{id: "fc2", app: "c1/apps/c", phase: PhaseFailed, at: jan(3, 6, 0)},
			rec{id: "sc1", app: "c1/apps/c", at: jan(3, 12, 0)},
		),
		req: week(ByCluster, jan(1, 0, 0), jan(8, 0, 0)),
		want: []Row{
			// Deployments sb1, sc1 = 2 (sa1 is after To); failures fa1,
			// fb1, fc1, fc2 = 4; CFR 4/6. Restores sorted 6h, 12h, 98h:
			// median 12h, mean 116h/3 = 38h40m. fb1 is unrestored.
			row("c1", weekOf, 1, Row{Deployments: 2, Failures: 4, PerDay: 2.0 / 7, ChangeFailureRate: 4.0 / 6,
				TimeToRestore: &Durations{Count: 3, Median: 12 * time.Hour, P90: 98 * time.Hour, Mean: 38*time.Hour + 40*time.Minute},
				Unrestored:    1, LeadTimeUnknown: 2}),
		},
	}, {
		name: "by label, records without the label go to (none)",
		recs: deps(
			rec{id: "l0", app: "c1/apps/a", labels: map[string]string{"team": "pay"}, at: time.Date(2023, 12, 30, 0, 0, 0, 0, time.UTC)},
			rec{id: "l1", app: "c1/apps/a", labels: map[string]string{"team": "pay"}, at: jan(2, 9, 0)},
			rec{id: "l2", app: "c1/apps/b", labels: map[string]string{"team": "pay"}, phase: PhaseFailed, at: jan(3, 10, 0)},
			rec{id: "l3", app: "c1/apps/b", labels: map[string]string{"team": "pay"}, at: jan(3, 10, 45)},
			rec{id: "l4", app: "c2/apps/a", labels: map[string]string{"team": "web"}, at: jan(9, 9, 0)},
			rec{id: "l5", app: "c2/apps/z", labels: map[string]string{"env": "prod"}, at: jan(10, 9, 0)},
			rec{id: "l6", app: "c2/apps/y", at: jan(10, 9, 0)},
		),
		req: Request{By: ByLabel, Label: "team", Bucket: Week, From: jan(1, 0, 0), To: jan(15, 0, 0)},
		want: []Row{
			// l5 (another label only) and l6 (no labels).
			row(None, weekOf, 8, Row{Deployments: 2, PerDay: 2.0 / 7, LeadTimeUnknown: 2}),
			// l1, l3 succeeded, l2 failed: CFR 1/3; l2 → l3 = 45m. l0 is
			// before From.
			row("pay", weekOf, 1, Row{Deployments: 2, Failures: 1, PerDay: 2.0 / 7, ChangeFailureRate: 1.0 / 3,
				TimeToRestore: &Durations{Count: 1, Median: 45 * time.Minute, P90: 45 * time.Minute, Mean: 45 * time.Minute}, LeadTimeUnknown: 2}),
			// l4.
			row("web", weekOf, 8, Row{Deployments: 1, PerDay: 1.0 / 7, LeadTimeUnknown: 1}),
		},
	}, {
		name: "records are de-duplicated by deployment id, the first wins",
		recs: deps(
			rec{id: "d1", app: "c1/apps/a", project: "shop", at: jan(2, 10, 0)},
			rec{id: "d1", app: "c1/apps/a", project: "shop", at: jan(2, 10, 0)},
			rec{id: "d2", app: "c1/apps/b", at: jan(2, 11, 0)},
			rec{id: "d2", app: "c1/apps/b", phase: PhaseFailed, at: jan(4, 11, 0)},
		),
		req: Request{By: ByProject, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0)},
		want: []Row{
			// d2 once, as it came first: no project.
			row(None, dayOf, 2, Row{Deployments: 1, PerDay: 1, LeadTimeUnknown: 1}),
			// d1 once.
			row("shop", dayOf, 2, Row{Deployments: 1, PerDay: 1, LeadTimeUnknown: 1}),
		},
	}, {
		name: "lead time where the commit time is known, absent where it is not",
		recs: deps(
			rec{id: "e1", app: "c1/apps/a", rev: "r1", at: jan(2, 12, 0)},             // commit 11:00: 1h
			rec{id: "e2", app: "c1/apps/a", rev: "r2", prev: "r1", at: jan(3, 12, 0)}, // commit 10:00: 2h
			rec{id: "e3", app: "c1/apps/a", rev: "r2", prev: "r2", at: jan(3, 13, 0)}, // same revision: no change
			rec{id: "e4", app: "c1/apps/a", rev: "r3", prev: "r2", at: jan(4, 12, 0)}, // commit 08:00: 4h
			rec{id: "e5", app: "c1/apps/a", rev: "r4", prev: "r3", at: jan(5, 12, 0)}, // commit unknown
			rec{id: "e6", app: "c1/apps/a", rev: "r5", prev: "r4", at: jan(5, 13, 0)}, // commit after the finish: unknown
			rec{id: "e7", app: "c1/apps/a", rev: "r6", phase: PhaseFailed, at: jan(6, 0, 0)},
			rec{id: "g1", app: "c1/apps/b", rev: "x1", at: jan(2, 0, 0)}, // commit unknown
		),
		req: Request{By: ByApp, Bucket: Week, From: jan(1, 0, 0), To: jan(8, 0, 0), CommitTime: commitTime},
		want: []Row{
			// e1..e6 succeeded, e7 failed: CFR 1/7, e7 unrestored. Lead
			// times 1h, 2h, 4h: median 2h, mean 7h/3 = 2h20m; e5 and e6
			// unknown; e3 not a change.
			row("c1/apps/a", weekOf, 1, Row{Deployments: 6, Failures: 1, PerDay: 6.0 / 7, ChangeFailureRate: 1.0 / 7,
				Unrestored: 1, LeadTime: &Durations{Count: 3, Median: 2 * time.Hour, P90: 4 * time.Hour, Mean: 2*time.Hour + 20*time.Minute},
				LeadTimeUnknown: 2}),
			// g1: no commit time, so no lead time at all.
			row("c1/apps/b", weekOf, 1, Row{Deployments: 1, PerDay: 1.0 / 7, LeadTimeUnknown: 1}),
		},
	}, {
		name: "frequency counts only the days of a bucket that are in range",
		recs: deps(
			rec{id: "p3", app: "c1/apps/a", project: "shop", phase: PhaseFailed, at: jan(2, 23, 0)}, // before From
			rec{id: "p1", app: "c1/apps/a", project: "shop", at: jan(3, 0, 0)},                      // From itself
			rec{id: "p2", app: "c1/apps/b", project: "shop", at: jan(7, 0, 0)},
			rec{id: "p4", app: "c1/apps/a", project: "shop", at: jan(16, 23, 59)},
			rec{id: "p5", app: "c1/apps/a", project: "shop", at: jan(17, 0, 0)}, // To: out
		),
		// Wednesday the 3rd to Wednesday the 17th.
		req: week(ByProject, jan(3, 0, 0), jan(17, 0, 0)),
		want: []Row{
			// p1, p2 in the 5 days from the 3rd to the 8th: 2/5.
			row("shop", weekOf, 1, Row{Deployments: 2, PerDay: 2.0 / 5, LeadTimeUnknown: 2}),
			// Nothing in the week of the 8th: no row. p4 in the 2 days
			// from the 15th to the 17th: 1/2.
			row("shop", weekOf, 15, Row{Deployments: 1, PerDay: 1.0 / 2, LeadTimeUnknown: 1}),
		},
	}, {
		name: "phases other than Succeeded, Failed and Error are ignored and counted",
		recs: deps(
			rec{id: "i1", app: "c1/apps/a", at: jan(2, 0, 0)},
			rec{id: "i2", app: "c1/apps/a", phase: "Running", at: jan(2, 1, 0)},
			rec{id: "i3", app: "c1/apps/a", phase: "Running", at: jan(20, 0, 0)}, // out of range
			rec{id: "i4", app: "c2/apps/a", phase: PhaseError, at: jan(2, 0, 0)},
		),
		req: Request{By: ByCluster, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0)},
		want: []Row{
			row("c1", dayOf, 2, Row{Deployments: 1, PerDay: 1, LeadTimeUnknown: 1}),
			// i4: Error counts as a failure, never restored.
			row("c2", dayOf, 2, Row{Failures: 1, ChangeFailureRate: 1, Unrestored: 1}),
		},
		ignored: 1, // i2
	}, {
		name: "syncs that changed nothing or reverted drift are left out and counted apart, and still restore",
		recs: deps(
			rec{id: "u1", app: "c1/apps/a", rev: "r1", prev: "r0", at: jan(2, 0, 0)},
			rec{id: "u2", app: "c1/apps/a", rev: "r1", prev: "r1", unchanged: true, at: jan(2, 1, 0)}, // a self-heal
			rec{id: "u3", app: "c1/apps/a", rev: "r1", prev: "r1", phase: PhaseFailed, unchanged: true, at: jan(2, 2, 0)},
			rec{id: "u4", app: "c1/apps/a", rev: "r2", prev: "r1", phase: PhaseFailed, at: jan(2, 3, 0)},
			rec{id: "u5", app: "c1/apps/a", rev: "r1", prev: "r1", unchanged: true, at: jan(2, 4, 0)}, // a rollback restores
			rec{id: "u6", app: "c2/apps/a", rev: "r1", prev: "r1", unchanged: true, at: jan(3, 0, 0)}, // only unchanged: a row of zeros
		),
		req: Request{By: ByCluster, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0)},
		want: []Row{
			row("c1", dayOf, 2, Row{Deployments: 1, Failures: 1, Unchanged: 3, PerDay: 1, ChangeFailureRate: 0.5,
				TimeToRestore: &Durations{Count: 1, Median: time.Hour, P90: time.Hour, Mean: time.Hour}, LeadTimeUnknown: 1}),
			row("c2", dayOf, 3, Row{Unchanged: 1}),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Deployments(tt.recs, tt.req)
			if err != nil {
				t.Fatalf("Deployments: %v", err)
			}
			want := Report{By: tt.req.By, Label: tt.req.Label, Bucket: tt.req.Bucket, From: tt.req.From, To: tt.req.To,
				Rows: tt.want, Ignored: tt.ignored}
			if diff := cmp.Diff(want, got, ignoreTotals); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentsGaps(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	gap := func(event, app, uid string, last *int64, at time.Time) projector.Gap {
		parts := strings.SplitN(app, "/", 3)
		return projector.Gap{EventID: event, At: at, DeploymentGap: schemas.DeploymentGap{
			Resource: schemas.Resource{Cluster: parts[0], Namespace: parts[1], Name: parts[2]},
			AppUID:   uid, Reason: schemas.GapHistoryTrimmed, LastRecorded: last,
		}}
	}
	recs := deps(
		rec{id: "h3", app: "c1/apps/a", uid: "ua", project: "shop", history: 3, at: jan(2, 0, 0)},
		rec{id: "h7", app: "c1/apps/b", uid: "ub", project: "web", history: 7, at: jan(20, 0, 0)}, // after To
	)
	gaps := []projector.Gap{
		// Hides deployments between h3 (the 2nd) and the 5th: counts.
		gap("gA1", "c1/apps/a", "ua", ptr(3), jan(5, 0, 0)),
		gap("gA1", "c1/apps/a", "ua", ptr(3), jan(5, 0, 0)), // the same event again
		// Recorded on the last day of 2023: what it hides is before From.
		gap("gA2", "c1/apps/a", "ua", nil, time.Date(2023, 12, 31, 0, 0, 0, 0, time.UTC)),
		// Hides deployments after h7, which finished after To.
		gap("gB1", "c1/apps/b", "ub", ptr(7), jan(21, 0, 0)),
		// Nothing recorded before it, recorded on the 10th: counts.
		gap("gB2", "c1/apps/b", "ub", nil, jan(10, 0, 0)),
		// An Application without records: its project is unknown.
		gap("gC", "c1/apps/c", "uc", nil, jan(10, 0, 0)),
		// Its last recorded deployment is not in the input, and it was
		// recorded after To: it may hide any of the range. Counts.
		gap("gD", "c1/apps/a", "ua", ptr(99), jan(30, 0, 0)),
	}
	// h3 is the only record in range: 1 deployment in the week of the 1st.
	shopRow := func(group string) []Row {
		return []Row{row(group, weekOf, 1, Row{Deployments: 1, PerDay: 1.0 / 7, LeadTimeUnknown: 1})}
	}
	tests := []struct {
		by   GroupBy
		rows []Row
		want []GapCount
	}{
		{ByProject, shopRow("shop"), []GapCount{{Unknown, 1}, {"shop", 2}, {"web", 1}}},
		{ByApp, shopRow("c1/apps/a"), []GapCount{{"c1/apps/a", 2}, {"c1/apps/b", 1}, {"c1/apps/c", 1}}},
		{ByCluster, shopRow("c1"), []GapCount{{"c1", 4}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.by), func(t *testing.T) {
			req := Request{By: tt.by, Bucket: Week, From: jan(1, 0, 0), To: jan(15, 0, 0), Gaps: gaps}
			got, err := Deployments(recs, req)
			if err != nil {
				t.Fatalf("Deployments: %v", err)
			}
			want := Report{By: tt.by, Bucket: Week, From: req.From, To: req.To, Rows: tt.rows, Gaps: tt.want}
			if diff := cmp.Diff(want, got, ignoreTotals); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeploymentsOrder checks that the report does not depend on the order
// of the input, nor on map iteration.
func TestDeploymentsOrder(t *testing.T) {
	var recs []projector.Deployment
	for app := range 7 {
		name := string(rune('a' + app))
		for k := range 40 {
			phase := PhaseSucceeded
			if (app+k)%5 == 0 {
				phase = PhaseFailed
			}
			recs = append(recs, deps(rec{
				id: fmt.Sprintf("%s-%d", name, k), app: "c1/apps/" + name,
				project: []string{"x", "y", ""}[app%3], phase: phase, at: jan(1, 0, 0).Add(time.Duration(k*(app+3)) * 7 * time.Hour),
			})...)
		}
	}
	req := Request{By: ByProject, Bucket: Day, From: jan(2, 0, 0), To: jan(30, 0, 0)}
	want, err := Deployments(recs, req)
	if err != nil {
		t.Fatalf("Deployments: %v", err)
	}
	if len(want.Rows) < 10 {
		t.Fatalf("only %d rows: the fixture is too small to test order", len(want.Rows))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		shuffled := slices.Clone(recs)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		got, err := Deployments(shuffled, req)
		if err != nil {
			t.Fatalf("Deployments: %v", err)
		}
		if diff := cmp.Diff(want, got, ignoreTotals); diff != "" {
			t.Errorf("shuffle %d changed the report (-want +got):\n%s", i, diff)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	from, to := jan(1, 0, 0), jan(8, 0, 0)
	tests := []struct {
		name string
		req  Request
		ok   bool
	}{
		{"by app, weekly", Request{By: ByApp, Bucket: Week, From: from, To: to}, true},
		{"by label with a key", Request{By: ByLabel, Label: "team", Bucket: Day, From: from, To: to}, true},
		{"by label without a key", Request{By: ByLabel, Bucket: Day, From: from, To: to}, false},
		{"a key when not by label", Request{By: ByProject, Label: "team", Bucket: Day, From: from, To: to}, false},
		{"unknown grouping", Request{By: "namespace", Bucket: Day, From: from, To: to}, false},
		{"unknown bucket", Request{By: ByApp, Bucket: "month", From: from, To: to}, false},
		{"no from", Request{By: ByApp, Bucket: Day, To: to}, false},
		{"no to", Request{By: ByApp, Bucket: Day, From: from}, false},
		{"empty range", Request{By: ByApp, Bucket: Day, From: from, To: from}, false},
		{"reversed range", Request{By: ByApp, Bucket: Day, From: to, To: from}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Deployments(nil, tt.req)
			if tt.ok && err != nil {
				t.Fatalf("Deployments: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("Deployments: got %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestBucketStart(t *testing.T) {
	utc := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }
	tests := []struct {
		name string
		at   time.Time
		week bool
		want time.Time
	}{
		{"a Monday's first instant", utc(2024, 1, 1, 0), true, utc(2024, 1, 1, 0)},
		{"Sunday, across the new year", time.Date(2023, 12, 31, 23, 59, 59, 999, time.UTC), true, utc(2023, 12, 25, 0)},
		{"the epoch, a Thursday", utc(1970, 1, 1, 0), true, utc(1969, 12, 29, 0)},
		{"before the epoch, a Wednesday", utc(1969, 12, 31, 12), true, utc(1969, 12, 29, 0)},
		{"day before the epoch", utc(1969, 12, 31, 12), false, utc(1969, 12, 31, 0)},
		{"day", utc(2024, 2, 29, 23), false, utc(2024, 2, 29, 0)},
		{"another zone is read in UTC", time.Date(2024, 1, 8, 0, 30, 0, 0, time.FixedZone("CET", 3600)), true, utc(2024, 1, 1, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := time.Unix(bucketStart(tt.at.Unix(), tt.week), 0).UTC()
			if !got.Equal(tt.want) {
				t.Errorf("bucketStart(%s) = %s, want %s", tt.at, got, tt.want)
			}
		})
	}
}

// TestLeadTimeFromRecords: without a CommitTime, lead time comes from the
// commit time each record carries; a record without one is unknown.
func TestLeadTimeFromRecords(t *testing.T) {
	recs := deps(rec{id: "1", app: "c1/argocd/web", at: jan(2, 10, 0)}, rec{id: "2", app: "c1/argocd/web", at: jan(2, 11, 0)},
		rec{id: "3", app: "c1/argocd/web", at: jan(2, 12, 0)})
	c1, c2 := jan(2, 9, 30), jan(2, 10, 0)
	recs[0].RevisionCommittedAt, recs[1].RevisionCommittedAt = &c1, &c2
	rep, err := Deployments(recs, Request{By: ByApp, Bucket: Day, From: jan(2, 0, 0), To: jan(3, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	r := rep.Rows[0]
	if r.LeadTime == nil || r.LeadTime.Count != 2 || r.LeadTime.Median != 45*time.Minute || r.LeadTimeUnknown != 1 {
		t.Errorf("lead time %+v, unknown %d: want 30 and 60 minutes, median 45, one unknown", r.LeadTime, r.LeadTimeUnknown)
	}
}

// TestRecoveryWithHealth: with health changes, a failure is recovered once
// its Application is Healthy after the next successful deployment, and a
// turn to Degraded after a successful deployment counts, with the time to
// Healthy again; one after a failed sync is that failure's.
func TestRecoveryWithHealth(t *testing.T) {
	health := func(app, h string, at time.Time) projector.HealthChange {
		parts := strings.SplitN(app, "/", 3)
		return projector.HealthChange{AppKey: projector.AppKey{Cluster: parts[0], Namespace: parts[1], Name: parts[2]},
			Health: h, At: at, EventID: app + h + at.String()}
	}
	recs := deps(
		// a: fails at 10:00, deploys at 10:30 while Degraded since 10:05,
		// Healthy at 10:50: recovered in 50 minutes.
		rec{id: "a1", app: "c1/apps/a", phase: PhaseFailed, at: jan(2, 10, 0)},
		rec{id: "a2", app: "c1/apps/a", at: jan(2, 10, 30)},
		// b: deploys at 11:00, turns Degraded at 11:10, Healthy at 11:40.
		// Then Degraded at 12:00 and never Healthy again.
		rec{id: "b1", app: "c1/apps/b", at: jan(2, 11, 0)},
		// c: fails, then deploys while Healthy all along: recovered by the
		// deployment.
		rec{id: "c1", app: "c1/apps/c", phase: PhaseFailed, at: jan(2, 13, 0)},
		rec{id: "c2", app: "c1/apps/c", at: jan(2, 13, 20)},
	)
	hs := []projector.HealthChange{
		health("c1/apps/a", projector.HealthDegraded, jan(2, 10, 5)),
		health("c1/apps/a", projector.HealthHealthy, jan(2, 10, 50)),
		health("c1/apps/b", projector.HealthDegraded, jan(2, 11, 10)),
		health("c1/apps/b", projector.HealthHealthy, jan(2, 11, 40)),
		health("c1/apps/b", projector.HealthDegraded, jan(2, 12, 0)),
		health("c1/apps/c", projector.HealthHealthy, jan(2, 9, 0)),
	}
	got, err := Deployments(recs, Request{By: ByCluster, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0), Health: hs})
	if err != nil {
		t.Fatal(err)
	}
	// Recoveries: a 50m, b 30m, c 20m; b's second is not recovered.
	want := []Row{row("c1", dayOf, 2, Row{Deployments: 3, Failures: 2, Degraded: 2, PerDay: 3, ChangeFailureRate: 0.4,
		TimeToRestore: &Durations{Count: 3, Median: 30 * time.Minute, P90: 50 * time.Minute, Mean: 100 * time.Minute / 3},
		Unrestored:    1, LeadTimeUnknown: 3})}
	if diff := cmp.Diff(want, got.Rows); diff != "" {
		t.Errorf("rows (-want +got)\n%s", diff)
	}
	// Without health, recovery is the next successful deployment.
	got, err = Deployments(recs, Request{By: ByCluster, Bucket: Day, From: jan(1, 0, 0), To: jan(8, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Rows[0]; r.Degraded != 0 || r.TimeToRestore.Count != 2 || r.TimeToRestore.Median != 25*time.Minute {
		t.Errorf("without health: %+v, %+v", r, r.TimeToRestore)
	}
}
