//go:build integration

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// TestBenchmarkRuns runs the fleet benchmark as `make bench-fleet` does,
// built binaries and all, on a Kafka cluster of two brokers it starts
// itself, with a fleet of four and a few seconds of changes, and checks
// that the results file holds every measurement: every change
// acknowledged, the projector's view followed, live questions answered,
// ingestion, bootstrap, the codecs, connections to both brokers and both
// plots. It asserts nothing about how fast: that is the benchmark's to
// report. Ingestion is of 100,000 deltas, so that even the batched phase
// (20,000 events) spans more than one of the benchmark's polls of the
// projector's offsets: with 20,000 deltas it was folded within one, now
// and then, and the benchmark rightly refused to report a rate.
func TestBenchmarkRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for pkg, name := range map[string]string{"./cmd/argosy": "argosy", "./cmd/argosy-hub": "argosy-hub", "./bench/fleet": "fleet"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}
	out := filepath.Join(dir, "results")
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "fleet"), "-sizes", "4", "-apps", "2", "-rate", "20", "-duration", "3s",
		"-view-every", "5", "-ingest", "100000", "-boot-apps", "5", "-profile", "2s", "-partitions", "4",
		"-brokers", "2", "-kafka", "", "-bin", bin, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fleet benchmark: %v\n%s", err, b)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.md"))
	if err != nil || len(files) != 1 {
		t.Fatalf("results files %v, %v; want one", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`changes made / failed / never acknowledged \| [1-9]\d* / 0 / 0 \|`),
		regexp.MustCompile(`answer → applied ack: p50 / p99 / max \| [1-9][\d.]* ms`),
		regexp.MustCompile(`answer → projector view: p50 / p99 / max \(n followed; not shown within 2 min\) \| [1-9][\d.]* ms .*\([1-9]\d*; 0\)`),
		regexp.MustCompile(`projector ingestion, status deltas verified and folded \| [1-9]\d* events/s`),
		regexp.MustCompile(`live question \(an Application's tree\) through the hub, asked → answered: p50 / p99 / max \(unanswered\) \| [1-9][\d.]* ms .*\(0\)`),
		regexp.MustCompile(`new spoke bootstrapped with its Applications \| [1-9][\d.]*m?s`),
		regexp.MustCompile(`\| zstd-fastest \(Argosy's\) \| [1-9]\d* B \| [1-9]\d* B \| [1-9]\d* B \|`),
		regexp.MustCompile(`N = 4, spokes</summary>`),
		regexp.MustCompile(`\| Kafka brokers \| 2 \|`),
		regexp.MustCompile(`TCP connections to the brokers, settled \(to the busiest\) \| [1-9]\d* \([1-9]\d*\) \|`),
	} {
		if !want.MatchString(report) {
			t.Errorf("results lack %s", want)
		}
	}
	for _, plot := range []string{"-latency.png", "-scale.png"} {
		png := strings.TrimSuffix(files[0], ".md") + plot
		if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
			t.Errorf("plot %s: %v", png, err)
		}
	}
	if t.Failed() {
		t.Logf("results:\n%s", report)
	}
}
