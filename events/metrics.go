package events

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are a component's metrics, made from the meter provider its
// options name (the global one by default, which cmd points at Prometheus).
// An instrument that could not be made is reported to OpenTelemetry's
// error handler (Instrument); the provider still returns one to record on.
type instruments struct {
	published    metric.Int64Counter
	processed    metric.Int64Counter
	deadLettered metric.Int64Counter
	retries      metric.Int64Counter
	keysBehind   metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(instrumentation)
	desc := metric.WithDescription
	return &instruments{
		published:    Instrument(m.Int64Counter("argosy.events.published", desc("Events appended durably, by type."))),
		processed:    Instrument(m.Int64Counter("argosy.events.processed", desc("Events a reader handled, by type."))),
		deadLettered: Instrument(m.Int64Counter("argosy.events.dead_lettered", desc("Records written to the dead-letter topic, by reason."))),
		retries:      Instrument(m.Int64Counter("argosy.events.retries", desc("Failed attempts that a reader will retry."))),
		keysBehind: Instrument(m.Int64Counter("argosy.events.keys_behind",
			desc("Records that waited for the key registry to catch up with the trust topic before they could be judged."))),
	}
}

func countType(ctx context.Context, c metric.Int64Counter, eventType string) {
	if c != nil {
		c.Add(ctx, 1, metric.WithAttributes(attribute.String("type", eventType)))
	}
}

func count(ctx context.Context, c metric.Int64Counter, attrs ...attribute.KeyValue) {
	if c != nil {
		c.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
}
