package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
)

// TestAppApplyTimesOut: against a hub that takes the connection and never
// answers (a process that is up but whose work has stopped), app apply
// gives up after --request-timeout with a message that names the hub and
// what to check, and does not send the write again; before, it waited for
// ever with no output.
func TestAppApplyTimesOut(t *testing.T) {
	cmdtest.Isolate(t)
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done(): // the client hung up: it gave up
		case <-release: // the test ends
		}
	}))
	defer srv.Close()
	defer close(release)
	file := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(file, []byte(twoApps), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := cmdtest.Run(t, NewCmdApp, "app", "apply", "-f", file, "--cluster", "prod-eu",
		"--server", srv.URL, "--token", "t", "--request-timeout", "200ms")
	for _, want := range []string{"the hub at " + srv.URL + " did not answer POST /api/v1/applications within 200ms",
		"check that the hub runs and that this is its address"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d requests, want 1: a hub that did not answer in time is not asked again", n)
	}
}

// TestAppApplyWithinTimeout: the real hub answers within the default
// --request-timeout and an explicit one, and apply works as before.
func TestAppApplyWithinTimeout(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, nil)
	file := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(file, []byte(twoApps), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--request-timeout", "30s"}, {"--request-timeout", "0"}} {
		stdout, _, err := run(t, h, h.Admin, "", append([]string{"apply", "-f", file, "--cluster", "prod-eu", "--dry-run"}, args...)...)
		if err != nil || !strings.Contains(stdout, "application.upserted  prod-eu") {
			t.Errorf("%v: %v\n%s", args, err, stdout)
		}
	}
}
