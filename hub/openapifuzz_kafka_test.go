//go:build integration

package hub_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// The OpenAPI fuzzer's budget: examples per operation and phase. make
// test runs the short one; make fuzz sets ARGOSY_OPENAPI_FUZZ_EXAMPLES
// for a longer run.
const (
	fuzzExamples     = 40
	fuzzSeed         = 32
	fuzzExamplesEnv  = "ARGOSY_OPENAPI_FUZZ_EXAMPLES"
	fuzzRequirements = "testdata/schemathesis/requirements.txt"
	fuzzConfig       = "testdata/schemathesis/schemathesis.toml"
)

// TestOpenAPIFuzz runs Schemathesis, with every check it has, against
// the document the hub serves (its own routes and the read API's) on a
// hub with the read API over a projector folding the real broker, with
// clusters, AppProjects and an Application to read: no answer may be a
// 5xx, and none may contradict the document (status, content type,
// headers, schema, a value the schema refuses taken or one it allows
// refused, a method without Allow). testdata/schemathesis/schemathesis.toml
// lists the checks that cannot hold, and why. The seed is fixed; the
// number of examples per operation and phase is fuzzExamples, or
// ARGOSY_OPENAPI_FUZZ_EXAMPLES (make fuzz).
func TestOpenAPIFuzz(t *testing.T) {
	examples := fuzzExamples
	if v := os.Getenv(fuzzExamplesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of examples", fuzzExamplesEnv, v)
		}
		examples = n
	}
	req, err := os.ReadFile(fuzzRequirements)
	if err != nil {
		t.Fatal(err)
	}
	python, err := toolcache.PythonVenv(t.Context(), "schemathesis", req)
	if err != nil {
		t.Fatal(err)
	}

	r := newRig(t, 2)
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	hubtest.Fold(t, []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.signer.Public())}, projector.WithTopics(r.topics))
	// Schemathesis calls every operation without a token too (the
	// ignored_auth check): the per-address limit on those would answer
	// 429 to the rest of the run.
	base := r.start(hub.WithReadAPI(read.New(store)), hub.WithUnauthenticatedLimit(1e6, 1e6))
	seedFleet(t, r, base)

	config, err := filepath.Abs(fuzzConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"-m", "schemathesis.cli", "--config-file", config, "run", base + "/openapi.json",
		"--url", base,
		"--header", "Authorization: Bearer " + r.tokens["root"],
		"--seed", strconv.Itoa(fuzzSeed),
		"--max-examples", strconv.Itoa(examples),
		"--workers", "1",
		"--generation-database", "none",
		"--request-timeout", "30",
		"--no-color",
		"--output-sanitize", "false",
	}
	cmd := exec.CommandContext(t.Context(), python, args...)
	cmd.Dir = dir
	// No hooks module of the caller's, and Hypothesis's files in dir.
	cmd.Env = append(os.Environ(), "SCHEMATHESIS_HOOKS=", "HOME="+dir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("schemathesis, %d examples per operation, seed %d, %s:\n%s", examples, fuzzSeed, time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("schemathesis: %v", err)
	}
}

// seedFleet registers two clusters, applies two AppProjects on both and
// an Application on one, and waits until the projector has folded it, so
// that the reads the fuzzer makes have something to answer with.
func seedFleet(t *testing.T, r *rig, base string) {
	t.Helper()
	root := r.client(base, "root")
	r.twoTeams(root)
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: appIn("pay", "team-a")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, v := r.getJSON(base, "root", "/api/v1/applications"); len(names(v, "name")) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the projector did not fold the Application")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
