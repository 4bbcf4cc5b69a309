package spoke_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

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

// TestReporterResyncsAndForgets runs the reporter for hours of fake time:
// a live Application's whole status goes out again at each resync, and
// a deleted one's deletion goes out once, after which the reporter keeps
// nothing of it and sends nothing more, however long it runs.
func TestReporterResyncsAndForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub := &capture{}
		rep, err := spoke.NewReporter("c1", pub, spoke.WithStatusResync(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		src := make(feed)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- rep.Run(ctx, src) }()
		status := func(name string, deleted bool) spoke.AppStatus {
			return spoke.AppStatus{Namespace: "argocd", Name: name, Deleted: deleted, Health: &schemas.HealthStatus{Status: "Healthy"}}
		}
		src <- status("live", false)
		src <- status("gone", false)
		time.Sleep(2 * time.Second)
		src <- status("gone", true)
		time.Sleep(5*time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		full, deletions := map[string]int{}, map[string]int{}
		for _, e := range pub.es {
			var d schemas.ApplicationStatusChanged
			if e.Type() != events.TypeApplicationStatus || json.Unmarshal(e.Data(), &d) != nil {
				t.Fatalf("unexpected event %s", e.Type())
			}
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
