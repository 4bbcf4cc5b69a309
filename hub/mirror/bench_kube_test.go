//go:build integration

package mirror_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/mirror"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// benchClusters is the fleet BenchmarkMirrorFleet mirrors; -clusters
// would need a flag of its own, so an environment variable sets it.
func benchClusters() int {
	if n, err := strconv.Atoi(os.Getenv("ARGOSY_MIRROR_BENCH_CLUSTERS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// BenchmarkMirrorFleet mirrors a fleet of 1,000 clusters of 5
// Applications each, seeded into the views with their deployment history
// and served by the real read API, into a real kube-apiserver. The first
// round writes every namespace and Application (reported as
// first-round-s); each iteration is then a round in which nothing changed.
// heap-peak-MiB is the most the process's heap held during the rounds,
// the read API's serving included; heap-after-MiB what it holds after
// them, once collected: the mirror keeps nothing between rounds.
//
//	go test -tags integration -run '^$' -bench BenchmarkMirrorFleet -benchtime 3x ./hub/mirror/
func BenchmarkMirrorFleet(b *testing.B) {
	e := kubetest.Current(b)
	ctx := b.Context()
	if err := e.InstallArgoCDCRDs(ctx); err != nil {
		b.Fatal(err)
	}
	store, err := sqlstore.OpenSQLite(ctx, filepath.Join(b.TempDir(), "views.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	l := readtest.Large{Clusters: benchClusters(), AppsPerCluster: 5, Now: time.Now(), Days: 3}
	if err := readtest.Seed(ctx, store, l); err != nil {
		b.Fatal(err)
	}
	if err := readtest.SeedHistory(ctx, store, l); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(read.New(store))
	defer srv.Close()
	hubc, err := api.NewClient(srv.URL, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := mirror.New(hubc, e.Admin, mirror.WithNamespacePrefix("bench-"))
	if err != nil {
		b.Fatal(err)
	}
	peak := watchHeap(ctx)
	start := time.Now()
	st, err := m.Round(ctx)
	if err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	if want := l.Clusters * l.AppsPerCluster; st.Written != want {
		b.Fatalf("the first round wrote %d Applications, want %d", st.Written, want)
	}
	b.ResetTimer()
	for b.Loop() {
		st, err := m.Round(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Written != 0 {
			b.Fatalf("a round with nothing changed wrote %d Applications", st.Written)
		}
	}
	b.StopTimer()
	b.ReportMetric(first.Seconds(), "first-round-s")
	b.ReportMetric(float64(peak())/(1<<20), "heap-peak-MiB")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-after-MiB")
}

// watchHeap samples the heap's live objects every 10 ms until ctx ends,
// and returns a func that reads the highest sample so far.
func watchHeap(ctx context.Context) func() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	peak := make(chan uint64, 1)
	peak <- 0
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(samples)
			p := <-peak
			peak <- max(p, samples[0].Value.Uint64())
		}
	}()
	return func() uint64 {
		p := <-peak
		peak <- p
		return p
	}
}
