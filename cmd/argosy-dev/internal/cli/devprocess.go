package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// connsPerAgent is how many connections one simulated cluster's agent
// holds to the broker at the peak, while the fleet starts: its one Kafka
// client's (the seed's, and the broker's for requests, for fetches and
// for produce requests), and those of its bootstrap's short-lived
// clients. With the embedded broker both ends of each connection are
// descriptors of this process. Measured with 1,000 clusters: at most
// 14,115 open in the first 100 s (7.1 a cluster, both ends), and 6,065
// once settled (three clients an agent held 18,113 after ready and
// 10,069 settled).
const connsPerAgent = 7

// descriptorSlack is what the rest of argosy-dev holds open besides the
// agents: the hub's, the projector's and the fold's Kafka clients, the
// broker's log and the store's files, HTTP connections.
const descriptorSlack = 1024

// descriptorsNeeded is about how many file descriptors argosy-dev needs
// for clusters simulated clusters, with the embedded broker or not.
func descriptorsNeeded(clusters int, embedded bool) uint64 {
	ends := 1
	if embedded {
		ends = 2
	}
	return uint64(clusters*connsPerAgent*ends + descriptorSlack)
}

// checkDescriptors refuses a fleet the open-file limit (Go raised its
// soft limit to the hard one at start) cannot hold: past it the broker
// would fail to take connections and the agents to make them.
func checkDescriptors(clusters int, embedded bool, limit uint64) error {
	need := descriptorsNeeded(clusters, embedded)
	if limit >= need {
		return nil
	}
	fits := 0
	for fits < clusters && descriptorsNeeded(fits+1, embedded) <= limit {
		fits++
	}
	return fmt.Errorf("--clusters %d needs about %d open files (%d connections a cluster, both ends in this process with the embedded broker, "+
		"and %d for the rest), and this process may open %d: raise the limit (ulimit -n %d in the shell; LimitNOFILE=%d under systemd; "+
		"docker run --ulimit nofile=%d:%d), or run --clusters %d or fewer",
		clusters, need, connsPerAgent, descriptorSlack, limit, need, need, need, need, fits)
}

// processStats is what argosy-dev reports of itself: resident memory and
// open files (0 where /proc does not tell them), heap and goroutines.
type processStats struct {
	RSS, Heap  uint64
	Goroutines uint64
	OpenFiles  int
}

func readProcessStats() processStats {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	metrics.Read(samples)
	s := processStats{Heap: samples[0].Value.Uint64(), Goroutines: samples[1].Value.Uint64()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				s.RSS = pages * uint64(os.Getpagesize())
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.OpenFiles = len(fds)
	}
	return s
}

// reportProcess logs the process's resident memory, heap, goroutines and
// open files every every until ctx ends, so that a user sees they stay
// flat; /metrics has the same (process_resident_memory_bytes,
// go_memstats_heap_inuse_bytes, go_goroutines, process_open_fds).
func reportProcess(ctx context.Context, log *slog.Logger, every time.Duration) error {
	if every <= 0 {
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		s := readProcessStats()
		log.InfoContext(ctx, "process", "rss_mib", s.RSS>>20, "heap_mib", s.Heap>>20, "goroutines", s.Goroutines, "open_files", s.OpenFiles)
	}
}
