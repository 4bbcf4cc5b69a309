//go:build integration

package cli_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestReadinessFollowsKafka runs argosy-hub with its read routes on a store
// and a projector replica folding into it (--store, --fold) on a broker of
// the test's own. Its /readyz (the chart's readiness probe) answers 200
// once the hub has read the log, 503 naming Kafka while the broker is
// stopped, and 200 again once it is back; /healthz stays 200 throughout,
// so a liveness probe does not restart a hub that only waits for Kafka.
func TestReadinessFollowsKafka(t *testing.T) {
	b := kafkatest.StartBroker(t)
	f := newFixtureOn(t, buildHub(t), b.Addr, b.Client(t))
	_, p, _ := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold"})
	ctx := t.Context()
	readyz, healthz := f.metrics["hub"]+"/readyz", f.metrics["hub"]+"/healthz"
	if body, err := p.WaitStatus(ctx, readyz, http.StatusOK, time.Minute); err != nil || body != "ok\n" {
		t.Fatalf("%q, %v", body, err)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	body, err := p.WaitStatus(ctx, readyz, http.StatusServiceUnavailable, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hub: kafka:", "projector: kafka:"} {
		if !strings.Contains(body, want) {
			t.Errorf("not ready, but %q does not say %q", body, want)
		}
	}
	if _, err := p.WaitStatus(ctx, healthz, http.StatusOK, 5*time.Second); err != nil {
		t.Error(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitStatus(ctx, readyz, http.StatusOK, time.Minute); err != nil {
		t.Fatal(err)
	}
}
