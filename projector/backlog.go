package projector

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/events"
)

// BacklogQuery is the part of a store the per-cluster gauges read: every
// registered cluster's backlog, in one query (sqlstore.Store.Backlogs).
// A Service whose Store also implements it exports the gauges.
type BacklogQuery interface {
	Backlogs(ctx context.Context, configTopic string) ([]ClusterBacklog, error)
}

// backlogTimeout bounds the store query of one metrics collection.
const backlogTimeout = 5 * time.Second

// observeBacklogs registers, until the returned func runs, the gauges of
// every registered cluster that is not deregistered, read from q once per
// collection: the age of its oldest config change that no acknowledgement
// answers (0 when none is pending) and, once it has sent one, the age of
// its last heartbeat. Every replica reports what the shared store holds,
// so the series of several replicas agree and `max by (cluster)` reads
// them.
func (s *Service) observeBacklogs(q BacklogQuery) (unregister func()) {
	m := s.o.Meters.Meter(instrumentation)
	oldest, err := m.Float64ObservableGauge("argosy.cluster.oldest_unapplied_change", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest config change written for a registered cluster that the cluster has not acknowledged; 0 when none is pending."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	beat, err := m.Float64ObservableGauge("argosy.cluster.heartbeat.age", metric.WithUnit("s"),
		metric.WithDescription("Age of a registered cluster's last heartbeat, for clusters that have sent one."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	topic := s.o.topics[events.TopicConfig]
	return registerCallback(m, func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, backlogTimeout)
		defer cancel()
		bs, err := q.Backlogs(ctx, topic)
		if err != nil {
			s.o.Log.WarnContext(ctx, "cluster backlog metrics not collected", "err", err)
			return nil
		}
		now := time.Now()
		for _, b := range bs {
			attrs := metric.WithAttributes(attribute.String("cluster", b.Cluster))
			var age float64
			if !b.OldestUnapplied.IsZero() {
				age = max(now.Sub(b.OldestUnapplied).Seconds(), 0)
			}
			o.ObserveFloat64(oldest, age, attrs)
			if !b.HeartbeatAt.IsZero() {
				o.ObserveFloat64(beat, max(now.Sub(b.HeartbeatAt).Seconds(), 0), attrs)
			}
		}
		return nil
	}, oldest, beat)
}
