//go:build integration

package projector_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/pgtest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

const oldestUnapplied = "argosy.cluster.oldest_unapplied_change"

// TestServiceExportsClusterBacklogs runs two projector replicas over one
// PostgreSQL on the real broker. Clusters c1 and c2 are registered and c1
// gets an Application; no spoke acknowledges, so each replica reports an
// oldest unapplied change for both that grows. Once c1 acknowledges its
// changes its age is 0, and its heartbeat's age is reported; once c2 is
// deregistered it is no longer reported.
func TestServiceExportsClusterBacklogs(t *testing.T) {
	r := newRig(t)
	c1 := r.signers["c1"]
	r.publish(t.Context(), r.hub, newEvent(t, "//argosy.dev/hub/test", events.TypeKeyRegistered, events.Subject{Cluster: "c1"},
		schemas.KeyRegistered{KeyID: c1.KeyID(), Owner: "c1", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(c1.Public())}))
	changes := []*event.Event{registered(t, "c1", 1), registered(t, "c2", 1), appUpsert(t, "c1", "guestbook", 1)}
	r.publish(t.Context(), r.hub, changes...)

	dsn := pgtest.Database(t)
	var readers []*sdkmetric.ManualReader
	for range 2 {
		store := openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenPostgres(ctx, dsn) })
		reader := sdkmetric.NewManualReader()
		readers = append(readers, reader)
		runService(t, r, store, projector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	}
	var first map[string]float64
	for i, reader := range readers {
		first = waitGauge(t, reader, oldestUnapplied, "replica "+string(rune('0'+i))+" reports c1 and c2 pending",
			func(g map[string]float64) bool { return g["c1"] > 0 && g["c2"] > 0 })
	}
	waitGauge(t, readers[0], oldestUnapplied, "c1's age grows", func(g map[string]float64) bool { return g["c1"] > first["c1"]+1 })

	for _, e := range changes {
		if e.Subject() == (events.Subject{Cluster: "c2"}).String() {
			continue
		}
		r.publish(t.Context(), c1, newEvent(t, "//argosy.dev/spoke/c1", events.TypeConfigApplied, events.Subject{Cluster: "c1"},
			schemas.ConfigApplied{Resource: schemas.Resource{Cluster: "c1", Name: "c1"}, EventID: e.ID()}))
	}
	r.publish(t.Context(), c1, heartbeat(t, "c1", 1, "v1"))
	for _, reader := range readers {
		waitGauge(t, reader, oldestUnapplied, "c1 applied everything", func(g map[string]float64) bool {
			v, ok := g["c1"]
			return ok && v == 0 && g["c2"] > 0
		})
		waitGauge(t, reader, "argosy.cluster.heartbeat.age", "c1's heartbeat age", func(g map[string]float64) bool {
			_, c1ok := g["c1"]
			_, c2ok := g["c2"]
			return c1ok && !c2ok
		})
	}

	r.publish(t.Context(), r.hub, newEvent(t, "//argosy.dev/hub/test", events.TypeClusterDeregistered, events.Subject{Cluster: "c2"},
		schemas.ClusterDeregistered{Resource: schemas.Resource{Cluster: "c2", Name: "c2", Generation: 2}}))
	for _, reader := range readers {
		waitGauge(t, reader, oldestUnapplied, "c2 deregistered", func(g map[string]float64) bool {
			_, ok := g["c2"]
			return !ok && len(g) == 1
		})
	}
}

func registered(t *testing.T, cluster string, gen int64) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/hub/test", events.TypeClusterRegistered, events.Subject{Cluster: cluster},
		schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: cluster, Name: cluster, Generation: gen}})
}

// runService runs a projector replica on the rig's topics into store until
// the test ends.
func runService(t *testing.T, r *rig, store projector.Store, opts ...projector.Option) {
	t.Helper()
	svc, err := projector.NewService([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.hub.Public())},
		append([]projector.Option{projector.WithTopics(r.topics), projector.WithGroup(r.topics[events.TopicConfig] + ".backlog")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30 s of its context ending")
		}
	})
}

// waitGauge collects reader until the gauge name, by cluster, satisfies
// ok, for up to a minute, and returns it.
func waitGauge(t *testing.T, reader *sdkmetric.ManualReader, name, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(t.Context(), &rm); err != nil {
			t.Fatal(err)
		}
		g := map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if data, isGauge := m.Data.(metricdata.Gauge[float64]); isGauge && m.Name == name {
					for _, dp := range data.DataPoints {
						c, _ := dp.Attributes.Value("cluster")
						g[c.AsString()] = dp.Value
					}
				}
			}
		}
		if ok(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never held: %v", what, name, g)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
