//go:build integration

package events_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
)

// TestTraceContinuesThroughKafka checks that the span a handler runs in
// continues the trace of the code that published the event, and that
// publishing and processing are counted. The providers are given to the
// producer and the reader, never installed globally: several components in
// one process report each to their own.
func TestTraceContinuesThroughKafka(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	telemetry := []events.Option{events.WithTracerProvider(tp), events.WithMeterProvider(mp)}

	r := newRig(t, 1, nil)
	r.popts = telemetry
	ctx, parent := tp.Tracer("test").Start(context.Background(), "argosy app sync")
	r.publishCtx(ctx, "cluster-a", appUpsert(t, "cluster-a"))
	parent.End()

	rd := newReader(t, r, r.decoder(), r.topics[events.TopicConfig], "trace", telemetry...)
	runCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var handled trace.SpanContext
	if err := rd.Run(runCtx, func(ctx context.Context, _ *events.Decoded) error {
		handled = trace.SpanContextFromContext(ctx)
		cancel()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if handled.TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("handler trace %s, publisher trace %s", handled.TraceID(), parent.SpanContext().TraceID())
	}
	names := map[string]trace.TraceID{}
	for _, s := range spans.Ended() {
		names[s.Name()] = s.SpanContext().TraceID()
	}
	for _, n := range []string{"events.publish", "events.process " + events.TypeApplicationUpserted} {
		if names[n] != parent.SpanContext().TraceID() {
			t.Errorf("span %q not in the trace (have %v)", n, names)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					got[m.Name] += dp.Value
				}
			}
		}
	}
	if got["argosy.events.published"] != 1 || got["argosy.events.processed"] != 1 {
		t.Errorf("metrics %v, want one published and one processed", got)
	}
}
