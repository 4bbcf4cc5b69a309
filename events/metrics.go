package events

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are the package's metrics, created on first use from the global
// meter provider (which cmd points at Prometheus).
type instruments struct {
	published    metric.Int64Counter
	processed    metric.Int64Counter
	deadLettered metric.Int64Counter
	retries      metric.Int64Counter
}

var meters = sync.OnceValue(func() *instruments {
	m := otel.Meter(instrumentation)
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		if err != nil {
			otel.Handle(err)
		}
		return c
	}
	return &instruments{
		published:    counter("argosy.events.published", "Events appended durably, by type."),
		processed:    counter("argosy.events.processed", "Events a reader handled, by type."),
		deadLettered: counter("argosy.events.dead_lettered", "Records written to the dead-letter topic, by reason."),
		retries:      counter("argosy.events.retries", "Failed attempts that a reader will retry."),
	}
})

func countType(ctx context.Context, c metric.Int64Counter, eventType string) {
	if c != nil {
		c.Add(ctx, 1, metric.WithAttributes(attribute.String("type", eventType)))
	}
}
