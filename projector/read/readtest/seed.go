package readtest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// Large describes a large fleet for Seed.
type Large struct {
	Clusters, AppsPerCluster int
	// Now is when the fleet is seen from; every tenth cluster's last
	// heartbeat is ten minutes older than that, so it is Stale.
	Now time.Time
	// Placed, Reads and Days add a history (SeedHistory): a placement
	// change of each of the first Placed Applications, Reads read calls,
	// and Days days of deployment records. Zero adds none.
	Placed, Reads, Days int
}

// Seed writes the rows of a large fleet straight into a store, without
// the log, for measuring how the read side copes with its size: cluster
// c-NNNNN labelled env (prod, staging, dev), region (eu, us, ap) and tier,
// each with AppsPerCluster Applications app-NNN, mostly Synced and
// Healthy.
func Seed(ctx context.Context, s projector.Store, l Large) error {
	envs, regions := []string{"prod", "staging", "dev"}, []string{"eu", "us", "ap"}
	spec := json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example.com/apps.git","path":"guestbook","targetRevision":"main"},"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"}}`)
	const perBatch = 200
	for first := 0; first < l.Clusters; first += perBatch {
		b := &projector.Batch{}
		for c := first; c < min(first+perBatch, l.Clusters); c++ {
			name := fmt.Sprintf("c-%05d", c)
			beat := l.Now.Add(-time.Duration(c%30) * time.Second)
			if c%10 == 9 {
				beat = l.Now.Add(-10 * time.Minute)
			}
			b.Registrations = append(b.Registrations, projector.ClusterRegistration{Cluster: name, Registered: true,
				Labels:       map[string]string{"env": envs[c%3], "region": regions[(c/3)%3], "tier": fmt.Sprint(c % 4)},
				RegisteredAt: l.Now.Add(-30 * 24 * time.Hour)})
			bySync, byHealth := map[string]int{}, map[string]int{}
			for a := range l.AppsPerCluster {
				key := projector.AppKey{Cluster: name, Namespace: "argocd", Name: fmt.Sprintf("app-%03d", a)}
				sync, health := "Synced", "Healthy"
				if (c+a)%17 == 0 {
					sync, health = "OutOfSync", "Degraded"
				}
				bySync[sync]++
				byHealth[health]++
				b.Desired = append(b.Desired, projector.AppDesired{AppKey: key, Project: "default", Generation: 2, Spec: spec,
					EventID: fmt.Sprintf("ev-%s-%d", name, a), UpdatedAt: l.Now.Add(-time.Hour)})
				b.Observed = append(b.Observed, projector.AppObserved{AppKey: key, Seq: 1, AppliedGeneration: 2,
					Sync:      &schemas.SyncStatus{Status: sync, Revision: "4f2a9c1e0b7d"},
					Health:    &schemas.HealthStatus{Status: health},
					UpdatedAt: l.Now.Add(-time.Hour)})
			}
			b.Beats = append(b.Beats, projector.ClusterBeat{Cluster: name, Seq: 1, At: beat, AgentVersion: "v0.3.0",
				ArgoCDVersion: "v2.14.21", Mode: "managed", Applications: l.AppsPerCluster, BySync: bySync, ByHealth: byHealth})
		}
		if err := s.Commit(ctx, b); err != nil {
			return fmt.Errorf("seeding clusters from %d: %w", first, err)
		}
	}
	return SeedHistory(ctx, s, l)
}
