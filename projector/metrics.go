package projector

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/events"
)

// instruments are a runner's metrics, made from the meter provider its
// options name (the global one by default, which cmd points at
// Prometheus).
type instruments struct {
	folded metric.Int64Counter
	steps  metric.Int64Counter
	step   metric.Float64Histogram
	lag    metric.Int64ObservableGauge
	meter  metric.Meter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(instrumentation)
	return &instruments{meter: m,
		folded: events.Instrument(m.Int64Counter("argosy.projector.folded",
			metric.WithDescription("Events folded into the views and committed, by type."))),
		steps: events.Instrument(m.Int64Counter("argosy.projector.steps",
			metric.WithDescription("Fold steps, by result: committed, or failed and folded again."))),
		step: events.Instrument(m.Float64Histogram("argosy.projector.step.duration", metric.WithUnit("s"),
			metric.WithDescription("Time from the poll that returned a step's records to their commit."),
			metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))),
		lag: events.Instrument(m.Int64ObservableGauge("argosy.projector.lag", metric.WithUnit("{record}"),
			metric.WithDescription("Records between the last one read and the partition's end, by assigned topic and partition, as of the last fetch."))),
	}
}

// recordStep counts a step's outcome, its duration and its folded types.
func (in *instruments) recordStep(ctx context.Context, started time.Time, folded []string, err error) {
	result := "committed"
	if err != nil {
		result = "failed"
	}
	if in.steps != nil {
		in.steps.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
	}
	if in.step != nil {
		in.step.Record(ctx, time.Since(started).Seconds(), metric.WithAttributes(attribute.String("result", result)))
	}
	if err != nil || in.folded == nil {
		return
	}
	counts := map[string]int64{}
	for _, t := range folded {
		counts[t]++
	}
	for t, n := range counts {
		in.folded.Add(ctx, n, metric.WithAttributes(attribute.String("type", t)))
	}
}

// lags holds the lag of each partition a Runner has assigned, for the lag
// gauge, which reports only those: a partition that moved to another
// replica is reported there, not here as well.
type lags struct {
	mu sync.Mutex
	by map[Partition]int64
}

// set records each fetched partition's lag: its last stable offset (the end
// a read_committed reader can reach) less the offset after its last record.
// A partition fetched with no records has none left to read.
func (l *lags) set(fs kgo.Fetches) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil {
			return
		}
		var lag int64
		if n := len(p.Records); n > 0 {
			end := p.LastStableOffset
			if end < 0 {
				end = p.HighWatermark
			}
			lag = max(0, end-(p.Records[n-1].Offset+1))
		}
		l.by[Partition{p.Topic, p.Partition}] = lag
	})
}

// drop forgets partitions that are no longer assigned; with none, all.
func (l *lags) drop(ps map[string][]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ps == nil {
		clear(l.by)
	}
	for t, parts := range ps {
		for _, p := range parts {
			delete(l.by, Partition{t, p})
		}
	}
}

// observe registers the lag gauge's callback until the returned func runs.
func (l *lags) observe(in *instruments) (unregister func()) {
	if in.lag == nil {
		return func() {}
	}
	return registerCallback(in.meter, func(_ context.Context, o metric.Observer) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p, n := range l.by {
			o.ObserveInt64(in.lag, n, metric.WithAttributes(attribute.String("topic", p.Topic),
				attribute.Int("partition", int(p.Partition))))
		}
		return nil
	}, in.lag)
}

// registerCallback registers f, which observes insts, on m until the
// returned func runs. An error is OpenTelemetry's to handle, and then
// nothing is observed.
func registerCallback(m metric.Meter, f metric.Callback, insts ...metric.Observable) (unregister func()) {
	reg, err := m.RegisterCallback(f, insts...)
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	return func() {
		if err := reg.Unregister(); err != nil {
			otel.Handle(err)
		}
	}
}
