//go:build integration

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// statusFleet is a fleet of clusters, each signing its own status events.
type statusFleet struct {
	*setup
	clusters []string
	signers  map[string]*events.Signer
	keys     []events.Key
}

// newStatusFleet appends total signed status events from n clusters of
// apps Applications each: one delta per change, and a heartbeat for every
// tenth event. With forgedEvery > 0, every forgedEvery-th event is signed
// by the next cluster's key instead: a forgery the projector verifies and
// dead-letters.
func newStatusFleet(b *testing.B, partitions int32, n, apps, total, forgedEvery int) *statusFleet {
	b.Helper()
	f := &statusFleet{setup: newSetup(b, partitions), signers: map[string]*events.Signer{}}
	cl := kafkatest.Client(b, events.ProducerOpts(nil)...)
	prods := map[string]*events.Producer{}
	for i := range n {
		c := fmt.Sprintf("cluster-%04d", i)
		s, err := events.GenerateSigner()
		if err != nil {
			b.Fatal(err)
		}
		if prods[c], err = events.NewProducer(cl, s, f.topics); err != nil {
			b.Fatal(err)
		}
		f.clusters, f.signers[c] = append(f.clusters, c), s
		f.keys = append(f.keys, events.Key{ID: events.KeyID(s.Public()), Owner: c, Role: schemas.RoleCluster,
			Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: s.Public()})
	}
	seq := map[string]int64{}
	ctx := context.Background()
	const batch = 1000
	for i := 0; i < total; {
		bySigner := map[string][]*event.Event{}
		for end := min(total, i+batch); i < end; i++ {
			c, signer := f.clusters[i%n], f.clusters[i%n]
			if forgedEvery > 0 && i%forgedEvery == forgedEvery-1 {
				signer = f.clusters[(i+1)%n]
			}
			bySigner[signer] = append(bySigner[signer], f.statusEvent(b, c, i, apps, seq))
		}
		for c, es := range bySigner {
			if _, err := prods[c].Publish(ctx, es...); err != nil {
				b.Fatal(err)
			}
		}
	}
	return f
}

func (f *statusFleet) statusEvent(b *testing.B, c string, i, apps int, seq map[string]int64) *event.Event {
	b.Helper()
	src := "//argosy.dev/spoke/" + c
	if i%10 == 9 {
		seq[c]++
		return mustEvent(b, src, events.TypeHeartbeat, events.Subject{Cluster: c}.String(), c,
			schemas.Heartbeat{Cluster: c, AgentVersion: "v1", Mode: "managed", Seq: seq[c], Applications: apps})
	}
	name := fmt.Sprintf("app-%03d", (i/len(f.clusters))%apps)
	key := c + "/" + name
	seq[key]++
	health := "Healthy"
	if seq[key]%2 == 0 {
		health = "Progressing"
	}
	return mustEvent(b, src, events.TypeApplicationStatus,
		events.Subject{Cluster: c, Kind: "applications", Namespace: "argocd", Name: name}.String(), c,
		schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: c, Namespace: "argocd", Name: name, Generation: 1},
			Seq: seq[key], Full: seq[key] == 1, Sync: &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("r%d", seq[key])},
			Health: &schemas.HealthStatus{Status: health}})
}

func mustEvent(b *testing.B, source, typ, subject, key string, data any) *event.Event {
	b.Helper()
	e, err := events.New(source, typ, subject, key, data)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkProjector folds signed status events end to end: a Runner reads
// them from Kafka, verifies every signature, folds them and commits rows
// and offsets to a fresh SQLite store, until the store's offsets reach the
// ends of the status topic. Each pass is a new consumer group and store,
// after one pass that warms the broker up.
// In "forged", every tenth event is signed with another cluster's key, and
// is dead-lettered. "fleet-100" and "fleet-1000" take the fleet
// benchmark's shape (docs/bench.md, Ingestion): 64 status partitions and
// N clusters, each signing its own deltas.
//
//	go test -tags integration -run '^$' -bench 'BenchmarkProjector' -benchtime 2x -count 6 ./bench/
func BenchmarkProjector(b *testing.B) {
	const apps, total = 10, 50_000
	for _, bc := range []struct {
		name                  string
		partitions            int32
		clusters, forgedEvery int
	}{{"valid", 8, 100, 0}, {"forged", 8, 100, 10}, {"fleet-100", 64, 100, 0}, {"fleet-1000", 64, 1000, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newStatusFleet(b, bc.partitions, bc.clusters, apps, total, bc.forgedEvery)
			reg := events.NewRegistry(append(f.reg.Keys(), f.keys...)...)
			dec, err := events.NewDecoder(events.NewVerifier(reg), events.WithTopics(f.topics))
			if err != nil {
				b.Fatal(err)
			}
			ends := endOffsets(b, f.topics[events.TopicStatus])
			// One pass first, not counted: the broker's JIT compiles its
			// fetch path on the first reads, which a running projector does
			// not pay for again.
			var cpu cpuClock
			foldAll(b, f.setup, dec, ends, &cpu)
			cpu = cpuClock{}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N { // not b.Loop: each pass stops the timer for its setup
				foldAll(b, f.setup, dec, ends, &cpu)
			}
			b.ReportMetric(float64(b.N*total)/b.Elapsed().Seconds(), "events/s")
			// This process's CPU time (the projector's, not the broker's) per
			// event: steadier than events/s on a machine others load too.
			b.ReportMetric(float64(cpu.total.Microseconds())/float64(b.N*total), "cpu-µs/event")
			if bc.forgedEvery > 0 {
				dlq := endOffsets(b, f.topics[events.TopicDeadLetter])
				if got, want := dlq[projector.Partition{Topic: f.topics[events.TopicDeadLetter]}], int64((b.N+1)*total/bc.forgedEvery); got != want {
					b.Fatalf("%d records dead-lettered, want %d", got, want)
				}
			}
		})
	}
}

func endOffsets(b *testing.B, topic string) map[projector.Partition]int64 {
	b.Helper()
	listed, err := kadm.NewClient(kafkatest.Client(b)).ListEndOffsets(context.Background(), topic)
	if err != nil {
		b.Fatal(err)
	}
	ends := map[projector.Partition]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			ends[projector.Partition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	})
	return ends
}

// cpuClock adds up this process's CPU time (user and system) between
// start and stop, as the benchmark timer does wall time.
type cpuClock struct {
	total, at time.Duration
}

func (c *cpuClock) start(b *testing.B) { b.StartTimer(); c.at = processCPU(b) }
func (c *cpuClock) stop(b *testing.B)  { b.StopTimer(); c.total += processCPU(b) - c.at }

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// foldAll runs a Runner on a new store until it has committed ends. cpu
// counts the CPU time of what the benchmark timer counts.
func foldAll(b *testing.B, s *setup, dec *events.Decoder, ends map[projector.Partition]int64, cpu *cpuClock) {
	b.Helper()
	b.StopTimer()
	store, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "views.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	r, err := projector.NewRunner([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(b))}, store, intake(b, s, dec),
		projector.WithGroup(fmt.Sprintf("bench-%d", time.Now().UnixNano())), projector.WithTopics(s.topics))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	cpu.start(b)
	go func() { done <- r.Run(ctx) }()
	var ps []projector.Partition
	for p := range ends {
		ps = append(ps, p)
	}
	for {
		got, err := store.Offsets(ctx, ps)
		if err != nil {
			b.Fatal(err)
		}
		if caughtUp(got, ends) {
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("store offsets %v never reached %v", got, ends)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu.stop(b)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

func caughtUp(got, want map[projector.Partition]int64) bool {
	for p, w := range want {
		if got[p] < w {
			return false
		}
	}
	return true
}
