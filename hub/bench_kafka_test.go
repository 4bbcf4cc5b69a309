//go:build integration

package hub_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
)

// BenchmarkChangeOneCluster measures changes to one cluster through the
// API, one at a time, each answered once durable: a registration's labels,
// which write one config event, its desired-state copy and the call's
// audit record in one transaction. It reports the mean time until durable.
//
//	go test -tags integration -run '^$' -bench BenchmarkChangeOneCluster -benchtime 200x ./hub/
func BenchmarkChangeOneCluster(b *testing.B) {
	r := newRig(b, 4)
	c := r.client(r.start(), "root")
	r.register(c, "bench", nil)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := c.RegisterCluster(b.Context(), "bench", api.ClusterRequest{Labels: map[string]string{"i": fmt.Sprint(i)}}, api.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "changes/s")
}

// BenchmarkChangeManyClusters measures changes from 32 concurrent callers,
// each to a cluster of its own, over 8 config partitions: writes to
// different partitions proceed side by side, those to one partition one
// transaction at a time.
//
//	go test -tags integration -run '^$' -bench BenchmarkChangeManyClusters -benchtime 2000x ./hub/
func BenchmarkChangeManyClusters(b *testing.B) {
	r := newRig(b, 8)
	c := r.client(r.start(), "root")
	const callers = 32
	for i := range callers {
		r.register(c, fmt.Sprintf("bench-%d", i), nil)
	}
	var next atomic.Int64
	b.SetParallelism(callers / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		name := fmt.Sprintf("bench-%d", next.Add(1)-1)
		i := 0
		for pb.Next() {
			i++
			if _, err := c.RegisterCluster(b.Context(), name, api.ClusterRequest{Labels: map[string]string{"i": fmt.Sprint(i)}}, api.WriteOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "changes/s")
}

// registerMany registers n clusters labelled env=bench, 32 at a time.
func registerMany(b *testing.B, c *api.Client, n int) []string {
	b.Helper()
	names := make([]string, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		names[i] = fmt.Sprintf("c%04d", i)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			signing, sealing, _ := clusterKeys(b)
			if _, err := c.RegisterCluster(b.Context(), names[i], api.ClusterRequest{Labels: map[string]string{"env": "bench"},
				SigningKey: signing, SealingKey: sealing}, api.WriteOptions{}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return names
}

// BenchmarkApplyToManyClusters measures one request applying an
// Application to 1,000 clusters over 64 config partitions: one
// transaction per partition, answered once all are durable.
//
//	go test -tags integration -run '^$' -bench BenchmarkApplyToManyClusters -benchtime 10x ./hub/
func BenchmarkApplyToManyClusters(b *testing.B) {
	r := newRig(b, 64)
	c := r.client(r.start(), "root")
	names := registerMany(b, c, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		res, err := c.Apply(b.Context(), api.KindApplications, api.ApplyRequest{Clusters: names, Manifest: appManifest()}, api.WriteOptions{})
		if err != nil || len(res.Events) != len(names) {
			b.Fatalf("%v, %d events", err, len(res.Events))
		}
	}
	b.ReportMetric(float64(b.N*len(names))/time.Since(start).Seconds(), "events/s")
}

// BenchmarkPlacement1000 measures a placement over 1,000 clusters: from the
// answer to a new generation of the placement until every cluster's
// Application event is durable and the placer lists all 1,000 placed.
//
//	go test -tags integration -run '^$' -bench BenchmarkPlacement1000 -benchtime 5x ./hub/
func BenchmarkPlacement1000(b *testing.B) {
	r := newRig(b, 64)
	c := r.client(r.start(), "root")
	names := registerMany(b, c, 1000)
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		m := strings.Replace(string(appManifest()), `"path":"web"`, fmt.Sprintf(`"path":"web-%d"`, i), 1)
		if _, err := c.ApplyPlacement(b.Context(), api.PlacementRequest{Selector: "env=bench", Manifest: json.RawMessage(m)}, api.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for {
			ps, err := c.Placements(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			placed := 0
			for _, pc := range ps[0].Clusters {
				if pc.State == "placed" && pc.PlacementGeneration == int64(i+1) {
					placed++
				}
			}
			if placed == len(names) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/placement")
	b.ReportMetric(float64(b.N*len(names))/total.Seconds(), "events/s")
}

// BenchmarkRegisterWithKeys measures registrations of new clusters with
// their keys, one at a time, each answered once durable. The keys are
// decided under the partition's lock with the trust topic read to its end
// (docs/design.md, "The rule"): a listing of its offsets and a wait for
// its reader, beside the transaction.
//
//	go test -tags integration -run '^$' -bench BenchmarkRegisterWithKeys -benchtime 20x ./hub/
func BenchmarkRegisterWithKeys(b *testing.B) {
	r := newRig(b, 4)
	c := r.client(r.start(), "root")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		signing, sealing, _ := clusterKeys(b)
		if _, err := c.RegisterCluster(b.Context(), fmt.Sprintf("bench-%d", i), api.ClusterRequest{SigningKey: signing, SealingKey: sealing}, api.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
