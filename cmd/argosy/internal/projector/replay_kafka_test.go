//go:build integration

package projector_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
)

// replayMatches rebuilds the fleet's log with `argosy replay rebuild` into
// a new SQLite store and checks with `argosy replay diff` that it matches
// the live store row by row, offsets included; then that a rebuild into
// the live store is refused and leaves it as it was.
func replayMatches(t *testing.T, p *projectorProc) {
	t.Helper()
	hubKey := filepath.Join(p.dir, "hub.pub") // written by start
	argosy := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), p.bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out) + stderr.String(), err
		}
		return string(out), nil
	}
	rebuild := func(store string) (string, error) {
		return argosy("replay", "rebuild", "--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", p.f.prefix,
			"--hub-key", hubKey, "--store", store, "--clock-margin", "200ms", "-q", "-o", "json")
	}
	rebuilt := "sqlite://" + filepath.Join(t.TempDir(), "rebuilt.db")
	out, err := rebuild(rebuilt)
	if err != nil {
		t.Fatalf("argosy replay rebuild: %v\n%s", err, out)
	}
	var res struct {
		Done            bool
		Records, Total  int64
		Events, Refused int64
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("argosy replay rebuild -o json: %v\n%s", err, out)
	}
	if !res.Done || res.Records != res.Total || res.Events == 0 || res.Refused == 0 {
		t.Errorf("rebuild: %+v, want done, every record read, events folded and the forged ones refused", res)
	}
	if out, err := argosy("replay", "diff", p.store, rebuilt); err != nil {
		t.Fatalf("argosy replay diff live rebuilt: %v\n%s", err, out)
	}
	asOfMatches(t, p, argosy, hubKey)
	exportMatches(t, p, argosy)
	out, err = rebuild(p.store)
	if err == nil || !strings.Contains(out, "already holds views") {
		t.Errorf("a rebuild into the live store: %v, want refused\n%s", err, out)
	}
	if out, err := argosy("replay", "diff", p.store, rebuilt); err != nil {
		t.Errorf("the live store changed after a refused rebuild: %v\n%s", err, out)
	}
}

// asOfMatches asks `argosy replay as-of` what held on each cluster now:
// the desired generation of every Application must be the live view's,
// and so must the applied generation the cluster last reported.
func asOfMatches(t *testing.T, p *projectorProc, argosy func(...string) (string, error), hubKey string) {
	t.Helper()
	live := openForTest(t, p.store)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, c := range p.f.clusters {
		out, err := argosy("replay", "as-of", now, "--cluster", c, "--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", p.f.prefix,
			"--hub-key", hubKey, "--clock-margin", "200ms", "-o", "json")
		if err != nil {
			t.Fatalf("argosy replay as-of --cluster %s: %v\n%s", c, err, out)
		}
		var res projector.AsOfResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("argosy replay as-of -o json: %v\n%s", err, out)
		}
		rows, err := live.Apps(t.Context(), projector.AppFilter{Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		want, got := map[string][2]int64{}, map[string][2]int64{}
		for _, r := range rows {
			var applied int64
			if r.Observed != nil {
				applied = r.Observed.AppliedGeneration
			}
			want[r.Name] = [2]int64{r.Desired.Generation, applied}
		}
		for _, a := range res.Apps {
			var applied int64
			if a.Observed != nil {
				applied = a.Observed.AppliedGeneration
			}
			if a.Desired == nil || a.DesiredFrom == nil {
				t.Errorf("as-of %s: %s has no desired state or no event it came from: %+v", c, a.Name, a)
				continue
			}
			got[a.Name] = [2]int64{a.Desired.Generation, applied}
		}
		if len(want) == 0 || !maps.Equal(want, got) {
			t.Errorf("as-of now on %s: (desired, applied) %v, want the live view's %v", c, got, want)
		}
	}
}

// exportMatches exports the fleet's log with `argosy export`: as JSON
// Lines, a line per event, each event once, and every record of the
// range read; as Parquet, a file of the same row count.
func exportMatches(t *testing.T, p *projectorProc, argosy func(...string) (string, error)) {
	t.Helper()
	dir := t.TempDir()
	rows := map[string]int64{}
	for _, file := range []string{"log.jsonl", "log.parquet"} {
		out, err := argosy("export", "--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", p.f.prefix,
			"--out", filepath.Join(dir, file), "-q", "-o", "json")
		if err != nil {
			t.Fatalf("argosy export --out %s: %v\n%s", file, err, out)
		}
		var res struct {
			Done                 bool
			Records, Total, Rows int64
			Skipped, Bytes       int64
			File, Format         string
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("argosy export -o json: %v\n%s", err, out)
		}
		if !res.Done || res.Records != res.Total || res.Rows == 0 || res.Skipped != 0 || res.Bytes == 0 {
			t.Errorf("export to %s: %+v, want done, every record read, rows written, none skipped", file, res)
		}
		rows[res.Format] = res.Rows
	}
	if rows["jsonl"] != rows["parquet"] {
		t.Errorf("rows exported: %v, want as many in each format", rows)
	}
	b, err := os.ReadFile(filepath.Join(dir, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, line := range lines {
		var row struct {
			Topic     string
			Partition int32
			Offset    int64
			Type      string
			Data      json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil || row.Type == "" {
			t.Fatalf("line %q: %v", line, err)
		}
		at := fmt.Sprintf("%s/%d@%d", row.Topic, row.Partition, row.Offset)
		if seen[at] {
			t.Errorf("%s exported twice", at)
		}
		seen[at] = true
	}
	if int64(len(lines)) != rows["jsonl"] {
		t.Errorf("%d lines, want a line for each of %d rows", len(lines), rows["jsonl"])
	}
}
