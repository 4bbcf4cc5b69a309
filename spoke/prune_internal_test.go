package spoke

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestPruningWaitsForTheLog: while the reader is behind its partition's
// end, records are judged by the log time of the last record it handled,
// not by the clock, so that a copy appended in time and not read yet still
// finds the record it must be refused by; at the end, or when the lag is
// unknown, as said.
func TestPruningWaitsForTheLog(t *testing.T) {
	read := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		behind  int64
		err     error
		wantNow bool
	}{
		{"at the end", 0, nil, true},
		{"behind", 42, nil, false},
		{"lag unknown", 0, errors.New("kafka is away"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &parts{read: &atomic.Int64{}, progress: func(context.Context) (int64, int64, error) { return 7, tc.behind, tc.err }}
			p.read.Store(read.UnixNano())
			got := readTo(t.Context(), p)
			if tc.wantNow && time.Since(got) > time.Minute || !tc.wantNow && !got.Equal(read) {
				t.Errorf("read to %s, want %v (the last record's log time %s)", got, map[bool]string{true: "now", false: "the log's"}[tc.wantNow], read)
			}
			until := read.Add(time.Second) // a deletion remembered until just after the last record read
			if forget := Forgettable(Applied{Transient: true, Deleted: true, Until: until}, got); forget != tc.wantNow {
				t.Errorf("forgotten %v, want %v", forget, tc.wantNow)
			}
		})
	}
}
