package spoke_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// feed is a StatusSource that delivers what a test sends it.
type feed chan spoke.AppStatus

func (f feed) Run(ctx context.Context, changed func(spoke.AppStatus)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-f:
			changed(s)
		}
	}
}

// capturing returns a reporter of cluster c1 with opts, publishing to the
// capture it returns.
func capturing(t *testing.T, opts ...spoke.Option) (*capture, *spoke.Reporter) {
	t.Helper()
	pub := &capture{}
	rep, err := spoke.NewReporter("c1", pub, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return pub, rep
}

// runReporter runs rep on a new feed until stop, which fails t if Run
// returned an error.
func runReporter(t *testing.T, rep *spoke.Reporter) (src feed, stop func()) {
	t.Helper()
	src = make(feed)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rep.Run(ctx, src) }()
	return src, func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestReporterResyncsAndForgets runs the reporter for hours of fake time:
// a live Application's whole status goes out again at each resync, and
// a deleted one's deletion goes out once, after which the reporter keeps
// nothing of it and sends nothing more, however long it runs.
func TestReporterResyncsAndForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub, rep := capturing(t, spoke.WithStatusResync(time.Hour))
		src, stop := runReporter(t, rep)
		status := func(name string, deleted bool) spoke.AppStatus {
			return spoke.AppStatus{Namespace: "argocd", Name: name, Deleted: deleted, Health: &schemas.HealthStatus{Status: "Healthy"}}
		}
		src <- status("live", false)
		src <- status("gone", false)
		time.Sleep(2 * time.Second)
		src <- status("gone", true)
		time.Sleep(5*time.Hour + time.Minute)
		synctest.Wait()
		stop()
		full, deletions := map[string]int{}, map[string]int{}
		for _, d := range statusDeltas(t, pub.es) {
			switch {
			case d.Deleted:
				deletions[d.Name]++
			case d.Full:
				full[d.Name]++
			}
		}
		if full["live"] < 5 || full["live"] > 6 {
			t.Errorf("the live Application's whole status went out %d times in 5 hours at an hourly resync, want 5 or 6", full["live"])
		}
		if full["gone"] != 1 || deletions["gone"] != 1 {
			t.Errorf("the deleted Application: %d whole statuses and %d deletions, want one of each and nothing after", full["gone"], deletions["gone"])
		}
		if n := rep.Counts().Total; n != 1 {
			t.Errorf("the reporter counts %d Applications, want the live one", n)
		}
	})
}

// statusDeltas returns the deltas es carry, alone or in batches, and fails
// on any other event or a batch of one.
func statusDeltas(t *testing.T, es []*event.Event) []*schemas.ApplicationStatusChanged {
	t.Helper()
	var out []*schemas.ApplicationStatusChanged
	for _, e := range es {
		sp, ok := events.Lookup(e.Type())
		if !ok {
			t.Fatalf("unexpected event %s", e.Type())
		}
		v := sp.NewData()
		if err := json.Unmarshal(e.Data(), v); err != nil {
			t.Fatal(err)
		}
		if canonical, err := json.Marshal(v); err != nil || !bytes.Equal(canonical, e.Data()) {
			t.Errorf("a %s event's data is not its canonical encoding, which readers' fast path takes: %s", e.Type(), e.Data())
		}
		ds := schemas.StatusDeltas(v)
		if len(ds) == 0 || e.Type() == events.TypeApplicationStatusBatch && len(ds) < 2 {
			t.Fatalf("a %s event with %d deltas", e.Type(), len(ds))
		}
		out = append(out, ds...)
	}
	return out
}

// TestReporterBatchesAWindow: the deltas of one window go out under one
// signature, in batches of at most schemas.MaxBatchDeltas; a lone delta
// goes out alone; every delta goes out once.
func TestReporterBatchesAWindow(t *testing.T) {
	for _, tc := range []struct{ apps, events int }{{1, 1}, {5, 1}, {schemas.MaxBatchDeltas, 1}, {schemas.MaxBatchDeltas*2 + 1, 3}} {
		t.Run(fmt.Sprint(tc.apps), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pub, rep := capturing(t, spoke.WithWindow(time.Second))
				src, stop := runReporter(t, rep)
				for i := range tc.apps {
					src <- spoke.AppStatus{Namespace: "argocd", Name: fmt.Sprintf("app-%03d", i), Health: &schemas.HealthStatus{Status: "Healthy"}}
				}
				time.Sleep(1500 * time.Millisecond)
				synctest.Wait()
				stop()
				if len(pub.es) != tc.events {
					t.Errorf("%d events for %d Applications' deltas, want %d", len(pub.es), tc.apps, tc.events)
				}
				names := map[string]int{}
				for _, d := range statusDeltas(t, pub.es) {
					names[d.Name]++
				}
				if len(names) != tc.apps {
					t.Errorf("deltas of %d Applications went out, want %d", len(names), tc.apps)
				}
				for n, c := range names {
					if c != 1 {
						t.Errorf("%s: %d deltas, want 1", n, c)
					}
				}
			})
		})
	}
}

// TestReporterBoundsABatch: deltas larger than the batch's byte bound
// split into several events, each within the size an event may have.
func TestReporterBoundsABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub, rep := capturing(t, spoke.WithWindow(time.Second))
		src, stop := runReporter(t, rep)
		long := strings.Repeat("x", 20<<10)
		for i := range 40 {
			src <- spoke.AppStatus{Namespace: "argocd", Name: fmt.Sprintf("app-%03d", i),
				Conditions: []schemas.Condition{{Type: "ComparisonError", Message: long}}}
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		stop()
		if len(pub.es) < 2 {
			t.Errorf("40 deltas of 20 KiB each went out in %d event(s), want several", len(pub.es))
		}
		for _, e := range pub.es {
			if n := len(e.Data()); n > events.MaxEventBytes/2 {
				t.Errorf("an event of %d bytes of data, want at most half of %d", n, events.MaxEventBytes)
			}
		}
		if n := len(statusDeltas(t, pub.es)); n != 40 {
			t.Errorf("%d deltas went out, want 40", n)
		}
	})
}
