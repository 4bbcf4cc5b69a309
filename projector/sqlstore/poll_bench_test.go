package sqlstore

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// BenchmarkViewPoll runs the read API's view poll of one cluster's
// Applications (read.clusterApps: Cluster, Apps and ClusterSummaries) over
// a fleet of pollClusters clusters of pollApps Applications each, the
// cluster changing from poll to poll.
func BenchmarkViewPoll(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.fresh(b)
			fillFleet(b, s)
			ctx := b.Context()
			n := 0
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				c := fmt.Sprintf("cluster-%02d", n%pollClusters)
				n++
				if _, ok, err := s.Cluster(ctx, c); err != nil || !ok {
					b.Fatalf("cluster %s: %v, %v", c, ok, err)
				}
				apps, err := s.Apps(ctx, projector.AppFilter{Cluster: c})
				if err != nil || len(apps) != pollApps {
					b.Fatalf("apps of %s: %d, %v", c, len(apps), err)
				}
				if _, err := s.ClusterSummaries(ctx); err != nil {
					b.Fatal(err)
				}
			}
			// This process's CPU time per poll (PostgreSQL's own is not in
			// it): steadier than wall time on a machine others load too.
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

const pollClusters, pollApps = 100, 10

// fillFleet commits a heartbeat and a status of each Application of each
// cluster.
func fillFleet(b testing.TB, s *Store) {
	b.Helper()
	var l eventLog
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for c := range pollClusters {
		name := fmt.Sprintf("cluster-%02d", c)
		p := projector.Partition{Topic: "argosy.status", Partition: int32(c % 8)}
		l.add(b, p, at, events.TypeHeartbeat, events.Subject{Cluster: name},
			&schemas.Heartbeat{Cluster: name, Seq: 1, Applications: pollApps})
		for a := range pollApps {
			i := c*pollApps + a
			l.add(b, p, at, events.TypeApplicationStatus, app(name, fmt.Sprintf("app-%05d", i)), statusChange(name, i, i))
		}
	}
	fold(b, s, projector.NewView(), l.out)
}

// processCPU is this process's CPU time so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
