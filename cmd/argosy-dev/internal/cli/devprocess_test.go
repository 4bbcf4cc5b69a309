package cli

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestCheckDescriptors: a fleet the open-file limit holds starts; one it
// does not is refused with the number needed, the ways to raise the
// limit, and how many clusters fit.
func TestCheckDescriptors(t *testing.T) {
	tests := []struct {
		clusters int
		embedded bool
		limit    uint64
		want     []string // nil: no error
	}{
		{clusters: 300, embedded: true, limit: 20000},
		{clusters: 1000, embedded: true, limit: 20000},
		{clusters: 1000, embedded: true, limit: 15024},
		{clusters: 1000, embedded: false, limit: 8100},
		{clusters: 1000, embedded: true, limit: 15000, want: []string{"--clusters 1000 needs about 15024 open files", "may open 15000",
			"ulimit -n 15024", "LimitNOFILE=15024", "--ulimit nofile=15024:15024", "run --clusters 998 or fewer"}},
		{clusters: 10000, embedded: true, limit: 4096, want: []string{"needs about 141024", "run --clusters 219 or fewer"}},
		{clusters: 2000, embedded: false, limit: 1024, want: []string{"needs about 15024", "run --clusters 0 or fewer"}},
	}
	for _, tc := range tests {
		err := checkDescriptors(tc.clusters, tc.embedded, tc.limit)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%d clusters (embedded %v), limit %d: %v", tc.clusters, tc.embedded, tc.limit, err)
			}
			continue
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%d clusters (embedded %v), limit %d: error %v, want it to say %q", tc.clusters, tc.embedded, tc.limit, err, w)
			}
		}
	}
}

// TestReportProcess: every period, argosy-dev logs its resident memory,
// heap, goroutines and open files, so that a user sees they stay flat.
func TestReportProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- reportProcess(ctx, log, time.Minute) }()
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d lines in two minutes, want 2:\n%s", len(lines), buf.String())
		}
		for _, want := range []string{"msg=process", "heap_mib=", "goroutines=", "rss_mib=", "open_files="} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("line %q, want %q in it", lines[0], want)
			}
		}
	})
	s := readProcessStats()
	if s.Heap == 0 || s.Goroutines == 0 || (runtime.GOOS == "linux" && (s.RSS == 0 || s.OpenFiles == 0)) {
		t.Errorf("stats %+v: want the heap, goroutines and, on Linux, resident memory and open files", s)
	}
}
