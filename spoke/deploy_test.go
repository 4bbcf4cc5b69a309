package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

var t0 = time.Date(2026, time.March, 1, 10, 0, 0, 0, time.UTC)

// hist returns history entries with ids from..to, a minute apart.
func hist(from, to int64) []spoke.HistoryEntry {
	var h []spoke.HistoryEntry
	for id := from; id <= to; id++ {
		at := t0.Add(time.Duration(id) * time.Minute)
		h = append(h, spoke.HistoryEntry{ID: id, Revision: "rev" + string(rune('a'+id)), StartedAt: at.Add(-10 * time.Second), FinishedAt: at, Initiator: "automated"})
	}
	return h
}

// summary is what a test compares: deployment ids, gap ranges, the mark.
type summary struct {
	IDs, Prev []string
	Gaps      []string
	Mark      spoke.DeployMark
}

func summarize(recs []schemas.DeploymentRecorded, gaps []schemas.DeploymentGap, m spoke.DeployMark) summary {
	var s summary
	for _, r := range recs {
		s.IDs, s.Prev = append(s.IDs, r.DeploymentID+":"+r.Phase), append(s.Prev, r.PreviousRevision)
	}
	for _, g := range gaps {
		to := "?"
		if g.ToHistoryID != nil {
			to = string(rune('0' + *g.ToHistoryID))
		}
		s.Gaps = append(s.Gaps, g.Reason+":"+string(rune('0'+g.FromHistoryID))+"-"+to)
	}
	s.Mark = m
	return s
}

func TestDeployments(t *testing.T) {
	app := spoke.AppStatus{Namespace: "argocd", Name: "web", UID: "u1", Project: "p", Generation: 3}
	with := func(h []spoke.HistoryEntry, last *spoke.SyncResult) spoke.AppStatus {
		a := app
		a.History, a.LastSync = h, last
		return a
	}
	failedAt := t0.Add(time.Hour)
	failedSync := &spoke.SyncResult{Phase: "Failed", Revision: "bad", StartedAt: failedAt, FinishedAt: failedAt.Add(time.Second)}
	tests := []struct {
		name string
		s    spoke.AppStatus
		mark spoke.DeployMark
		seen bool
		want summary
	}{
		{"first sight, whole history", with(hist(0, 2), nil), spoke.DeployMark{}, false, summary{
			IDs: []string{"u1/0:Succeeded", "u1/1:Succeeded", "u1/2:Succeeded"}, Prev: []string{"", "reva", "revb"},
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 2, LastRevision: "revc"}}},
		{"first sight, no history yet", with(nil, nil), spoke.DeployMark{}, false, summary{
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: -1}}},
		{"first sight, history already trimmed", with(hist(3, 4), nil), spoke.DeployMark{}, false, summary{
			IDs: []string{"u1/3:Succeeded", "u1/4:Succeeded"}, Prev: []string{"", "revd"}, Gaps: []string{"not_observed:0-2"},
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 4, LastRevision: "reve"}}},
		{"nothing new", with(hist(0, 2), nil), spoke.DeployMark{UID: "u1", LastHistoryID: 2, LastRevision: "revc"}, true, summary{
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 2, LastRevision: "revc"}}},
		{"one new", with(hist(0, 3), nil), spoke.DeployMark{UID: "u1", LastHistoryID: 2, LastRevision: "revc"}, true, summary{
			IDs: []string{"u1/3:Succeeded"}, Prev: []string{"revc"},
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 3, LastRevision: "revd"}}},
		{"trimmed during an outage", with(hist(5, 7), nil), spoke.DeployMark{UID: "u1", LastHistoryID: 2, LastRevision: "revc"}, true, summary{
			IDs: []string{"u1/5:Succeeded", "u1/6:Succeeded", "u1/7:Succeeded"}, Prev: []string{"", "revf", "revg"},
			Gaps: []string{"history_trimmed:3-4"}, Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 7, LastRevision: "revh"}}},
		{"a failed sync", with(hist(0, 1), failedSync), spoke.DeployMark{UID: "u1", LastHistoryID: 1, LastRevision: "revb"}, true, summary{
			IDs: []string{"u1/failed/2026-03-01T11:00:00Z:Failed"}, Prev: []string{"revb"},
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 1, LastRevision: "revb", LastFailure: failedAt}}},
		{"the same failed sync again", with(hist(0, 1), failedSync), spoke.DeployMark{UID: "u1", LastHistoryID: 1, LastRevision: "revb", LastFailure: failedAt}, true, summary{
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 1, LastRevision: "revb", LastFailure: failedAt}}},
		{"a running sync is not a deployment yet", with(nil, &spoke.SyncResult{Phase: "Running", StartedAt: failedAt}), spoke.DeployMark{UID: "u1", LastHistoryID: -1}, true, summary{
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: -1}}},
		{"recreated while away", with(hist(0, 0), nil), spoke.DeployMark{UID: "old", LastHistoryID: 4, LastRevision: "reve"}, true, summary{
			IDs: []string{"u1/0:Succeeded"}, Prev: []string{""}, Gaps: []string{"deleted_unobserved:5-?"},
			Mark: spoke.DeployMark{UID: "u1", LastHistoryID: 0, LastRevision: "reva"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, gaps, mark := spoke.Deployments("c1", tc.s, tc.mark, tc.seen)
			if diff := cmp.Diff(tc.want, summarize(recs, gaps, mark)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			for _, r := range recs {
				if r.Cluster != "c1" || r.Project != "p" || r.Generation != 3 || r.AppUID != "u1" || r.FinishedAt.Before(r.StartedAt) {
					t.Errorf("record %+v", r)
				}
			}
			// Folding the result in again records nothing more.
			again, moreGaps, same := spoke.Deployments("c1", tc.s, mark, true)
			if len(again) != 0 || len(moreGaps) != 0 || same != mark {
				t.Errorf("second pass: %d records, %d gaps, mark %+v", len(again), len(moreGaps), same)
			}
		})
	}
}

// memMarks is a MarkStore in memory; failing makes SaveMarks fail.
type memMarks struct {
	mu      sync.Mutex
	m       map[string]spoke.DeployMark
	failing bool
}

func (s *memMarks) Marks(context.Context) (map[string]spoke.DeployMark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m), nil
}

func (s *memMarks) SaveMarks(_ context.Context, set map[string]spoke.DeployMark, remove []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return errors.New("store unavailable")
	}
	maps.Copy(s.m, set)
	for _, k := range remove {
		delete(s.m, k)
	}
	return nil
}

// flaky is a Publisher that fails while down is set.
type flaky struct {
	capture
	down bool
}

func (f *flaky) Publish(ctx context.Context, es ...*event.Event) ([]*kgo.Record, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, errors.New("kafka unreachable")
	}
	return f.capture.Publish(ctx, es...)
}

func (f *flaky) ids() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[string]int{}
	for _, e := range f.es {
		n[e.Type()+" "+e.ID()]++
	}
	return n
}

// TestRecorder runs the recorder through an outage and a restart: every
// deployment is published, none twice under a different id, an Application
// deleted while the recorder was away gets a gap, and nothing is lost while
// Kafka is down.
func newRecorder(t *testing.T, pub spoke.Publisher, marks spoke.MarkStore) *spoke.Recorder {
	t.Helper()
	rec, err := spoke.NewRecorder("c1", pub, marks)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memMarks{m: map[string]spoke.DeployMark{
			"argocd/gone": {UID: "g1", LastHistoryID: 6, LastRevision: "x"},
		}}
		pub := &flaky{}
		rec := newRecorder(t, pub, store)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- rec.Run(ctx) }()

		web := spoke.AppStatus{Namespace: "argocd", Name: "web", UID: "u1", History: hist(0, 1)}
		rec.Observe(web)
		rec.Observe(spoke.AppStatus{ListDone: true})
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()

		pub.mu.Lock()
		pub.down = true
		pub.mu.Unlock()
		web.History = hist(0, 3)
		rec.Observe(web)
		time.Sleep(5 * time.Second) // several failed flushes
		synctest.Wait()
		pub.mu.Lock()
		pub.down = false
		pub.mu.Unlock()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		want := map[string]int{
			events.TypeDeploymentRecorded + " c1/argocd/web/u1/0":         1,
			events.TypeDeploymentRecorded + " c1/argocd/web/u1/1":         1,
			events.TypeDeploymentRecorded + " c1/argocd/web/u1/2":         1,
			events.TypeDeploymentRecorded + " c1/argocd/web/u1/3":         1,
			events.TypeDeploymentGap + " c1/argocd/gone/g1/gap/7-unknown": 1,
		}
		if diff := cmp.Diff(want, pub.ids()); diff != "" {
			t.Errorf("published (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff(map[string]spoke.DeployMark{"argocd/web": {UID: "u1", LastHistoryID: 3, LastRevision: "revd"}}, store.m); diff != "" {
			t.Errorf("marks (-want +got)\n%s", diff)
		}
		var g schemas.DeploymentGap
		for _, e := range pub.es {
			if e.Type() == events.TypeDeploymentGap {
				if err := json.Unmarshal(e.Data(), &g); err != nil {
					t.Fatal(err)
				}
			}
		}
		if g.Reason != schemas.GapDeletedUnobserved || g.FromHistoryID != 7 || g.ToHistoryID != nil || g.LastRecorded == nil || *g.LastRecorded != 6 {
			t.Errorf("gap %+v", g)
		}
	})
}

// TestRecorderRepublishesAfterLostMarks shows the crash window between
// publishing and saving the marks: while the store fails, the recorder
// retries the save without publishing again; a restart before the marks are
// saved publishes the same records again, with the same event ids, for
// readers to de-duplicate.
func TestRecorderRepublishesAfterLostMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memMarks{m: map[string]spoke.DeployMark{}, failing: true}
		pub := &flaky{}
		run := func(d time.Duration) {
			rec := newRecorder(t, pub, store)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- rec.Run(ctx) }()
			rec.Observe(spoke.AppStatus{Namespace: "argocd", Name: "web", UID: "u1", History: hist(0, 0)})
			time.Sleep(d)
			synctest.Wait()
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
		run(5500 * time.Millisecond) // five failed saves
		if got := pub.ids()[events.TypeDeploymentRecorded+" c1/argocd/web/u1/0"]; got != 1 {
			t.Errorf("published %d times while the marks could not be saved, want 1", got)
		}
		store.mu.Lock()
		store.failing = false
		store.mu.Unlock()
		run(1500 * time.Millisecond)
		if got := pub.ids()[events.TypeDeploymentRecorded+" c1/argocd/web/u1/0"]; got != 2 {
			t.Errorf("published %d times, want 2 with the same id", got)
		}
		if store.m["argocd/web"].LastHistoryID != 0 {
			t.Errorf("marks %+v", store.m)
		}
	})
}

// TestDeploymentsCarryCommitTime: a deployment of the revision the hub's
// change named carries that commit's time; a deployment of any other
// revision, or of one a change without a commit asked for, carries none.
func TestDeploymentsCarryCommitTime(t *testing.T) {
	committed := t0.Add(-time.Hour)
	s := spoke.AppStatus{Namespace: "argocd", Name: "web", UID: "u1", History: hist(0, 2), CommitRevision: "revb", CommitTime: committed}
	s.LastSync = &spoke.SyncResult{Phase: "Failed", Revision: "revb", StartedAt: t0.Add(5 * time.Minute), FinishedAt: t0.Add(6 * time.Minute)}
	recs, _, _ := spoke.Deployments("c1", s, spoke.DeployMark{}, false)
	got := map[string]*time.Time{}
	for _, r := range recs {
		got[r.DeploymentID] = r.RevisionCommittedAt
	}
	for id, want := range map[string]*time.Time{"u1/0": nil, "u1/1": &committed, "u1/2": nil, "u1/failed/2026-03-01T10:05:00Z": &committed} {
		if g, ok := got[id]; !ok || (g == nil) != (want == nil) || (g != nil && !g.Equal(*want)) {
			t.Errorf("%s: committed at %v, want %v (records %v)", id, g, want, got)
		}
	}
	s.CommitRevision, s.CommitTime = "", time.Time{}
	recs, _, _ = spoke.Deployments("c1", s, spoke.DeployMark{}, false)
	for _, r := range recs {
		if r.RevisionCommittedAt != nil {
			t.Errorf("%s carries a commit time with no commit named", r.DeploymentID)
		}
	}
}

// TestDeploymentsMarkUnchanged: a sync of the revision and source the
// deployment before it had (a re-sync that changed nothing, a self-heal)
// is marked unchanged, across calls through the mark too; a new revision, a
// new source, or a deployment whose predecessor is unknown is not.
func TestDeploymentsMarkUnchanged(t *testing.T) {
	entry := func(id int64, rev, src string) spoke.HistoryEntry {
		at := t0.Add(time.Duration(id) * time.Minute)
		return spoke.HistoryEntry{ID: id, Revision: rev, Source: src, StartedAt: at, FinishedAt: at}
	}
	s := spoke.AppStatus{Namespace: "argocd", Name: "web", UID: "u1", History: []spoke.HistoryEntry{
		entry(0, "a", "s1"), // first: its predecessor is unknown
		entry(1, "a", "s1"), // the same again: a self-heal
		entry(2, "a", "s2"), // new values, same revision: a change
		entry(3, "b", "s2"), // new revision: a change
		entry(4, "b", ""),   // no source recorded: cannot say
	}}
	unchanged := func(recs []schemas.DeploymentRecorded) map[string]bool {
		m := map[string]bool{}
		for _, r := range recs {
			m[r.DeploymentID] = r.Unchanged
		}
		return m
	}
	recs, _, _ := spoke.Deployments("c1", s, spoke.DeployMark{}, false)
	want := map[string]bool{"u1/0": false, "u1/1": true, "u1/2": false, "u1/3": false, "u1/4": false}
	if diff := cmp.Diff(want, unchanged(recs)); diff != "" {
		t.Errorf("unchanged (-want +got)\n%s", diff)
	}
	// The next call knows the last deployment only through the mark.
	s.History = append(s.History[:3:3], entry(3, "b", "s2"))
	_, _, mark := spoke.Deployments("c1", s, spoke.DeployMark{}, false)
	s.History = append(s.History, entry(4, "b", "s2"))
	s.LastSync = &spoke.SyncResult{Phase: "Failed", Revision: "b", Source: "s2", StartedAt: t0.Add(time.Hour), FinishedAt: t0.Add(time.Hour)}
	recs, _, _ = spoke.Deployments("c1", s, mark, true)
	want = map[string]bool{"u1/4": true, "u1/failed/2026-03-01T11:00:00Z": true}
	if diff := cmp.Diff(want, unchanged(recs)); diff != "" {
		t.Errorf("after the mark, unchanged (-want +got)\n%s", diff)
	}
	if mark.LastSource != "s2" {
		t.Errorf("mark keeps source %q, want s2", mark.LastSource)
	}
}
