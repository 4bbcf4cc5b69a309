//go:build integration

package projector_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
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
	out, err = rebuild(p.store)
	if err == nil || !strings.Contains(out, "already holds views") {
		t.Errorf("a rebuild into the live store: %v, want refused\n%s", err, out)
	}
	if out, err := argosy("replay", "diff", p.store, rebuilt); err != nil {
		t.Errorf("the live store changed after a refused rebuild: %v\n%s", err, out)
	}
}
