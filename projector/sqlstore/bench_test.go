package sqlstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

type namedBackend struct {
	name string
	backend
}

// benchBackends are the engines to benchmark: SQLite, and the engines
// that need a server when their build tag is set.
func benchBackends() []namedBackend {
	return append([]namedBackend{{"sqlite", sqliteBackend}}, serverBackends...)
}

// BenchmarkCommit folds batches of status observations (full statuses of
// Applications spread over clusters and status partitions) and commits
// each with its offsets, as a projector does once its working set is warm.
func BenchmarkCommit(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) { benchCommit(b, bk.backend, benchBatch, benchApps) })
		// A projector's steady state: a step of 10,000 status events over
		// 1,000 busy Applications, which the working set coalesces into
		// one row each before the commit.
		b.Run(bk.name+"/coalesced", func(b *testing.B) { benchCommit(b, bk.backend, 10*benchBatch, benchBatch) })
	}
}

const (
	benchBatch    = 1000
	benchApps     = 10000
	benchClusters = 100
	benchProjects = 50
)

func benchCommit(b *testing.B, bk backend, batch, apps int) {
	s := bk.fresh(b)
	v := projector.NewView()
	var l eventLog
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		l.out = l.out[:0]
		for range batch {
			i := n % apps
			c := fmt.Sprintf("cluster-%02d", i%benchClusters)
			p := projector.Partition{Topic: "argosy.status", Partition: int32(i % benchClusters % 8)}
			l.add(b, p, at.Add(time.Duration(n)*time.Millisecond), events.TypeApplicationStatus,
				app(c, fmt.Sprintf("app-%05d", i)), statusChange(c, i, n))
			n++
		}
		fold(b, s, v, l.out)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func statusChange(cluster string, i, n int) *schemas.ApplicationStatusChanged {
	health := "Healthy"
	if n%7 == 0 {
		health = "Progressing"
	}
	return &schemas.ApplicationStatusChanged{
		Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: fmt.Sprintf("app-%05d", i)},
		Seq:      int64(n), Full: true,
		Sync:      &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("%040x", n)},
		Health:    &schemas.HealthStatus{Status: health},
		Resources: &schemas.ResourceSummary{Total: 12, ByKind: map[string]int{"Deployment": 2, "Service": 2, "ConfigMap": 8}},
	}
}

// BenchmarkDeploymentsQuery asks for a month of deployment records among a
// million (100 clusters, 50 projects, a year), by project, by cluster, and
// all of them. The fixture is built once, through Commit.
func BenchmarkDeploymentsQuery(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.fresh(b)
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			const records = 1_000_000
			built := time.Now()
			fillDeployments(b, s, start, records)
			b.Logf("%s: %d deployment records committed in %s (%.0f rows/s)", bk.name, records,
				time.Since(built).Round(time.Millisecond), records/time.Since(built).Seconds())
			from := start.AddDate(0, 0, 200)
			window := projector.DeploymentFilter{From: from, To: from.AddDate(0, 0, 30)}
			byProject, byCluster := window, window
			byProject.Project, byCluster.Cluster = "project-07", "cluster-42"
			for _, q := range []struct {
				name string
				f    projector.DeploymentFilter
			}{{"project-30d", byProject}, {"cluster-30d", byCluster}, {"all-30d", window}} {
				b.Run(q.name, func(b *testing.B) { benchQuery(b, s, q.f) })
			}
		})
	}
}

func fillDeployments(b *testing.B, s *Store, start time.Time, records int) {
	const per = 10000
	step := 365 * 24 * time.Hour / time.Duration(records)
	for lo := 0; lo < records; lo += per {
		bt := &projector.Batch{Offsets: map[projector.Partition]int64{pDeploy0: int64(lo + per)}}
		for i := lo; i < min(records, lo+per); i++ {
			finished := start.Add(time.Duration(i) * step)
			d := deployment(fmt.Sprintf("uid-%07d/%d", i/10, i%10), fmt.Sprintf("cluster-%02d", i%benchClusters),
				fmt.Sprintf("project-%02d", (i/7)%benchProjects), finished)
			d.Name = fmt.Sprintf("app-%05d", (i/benchClusters)%benchApps)
			d.HistoryID = ptr(int64(i % 10))
			bt.Deployments = append(bt.Deployments, d)
		}
		commit(b, s, bt)
	}
}

func benchQuery(b *testing.B, s *Store, f projector.DeploymentFilter) {
	var lat []time.Duration
	rows := 0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		ds, err := s.Deployments(b.Context(), f)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		rows = len(ds)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(rows), "rows/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}
