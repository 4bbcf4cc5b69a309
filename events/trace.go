package events

import (
	"context"

	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context extensions (CloudEvents distributed tracing extension).
const (
	extTraceParent = "traceparent"
	extTraceState  = "tracestate"
)

const instrumentation = "github.com/argosyproj/argosy/events"

var propagator = propagation.TraceContext{}

// InjectTrace writes the span context of ctx into e's traceparent and
// tracestate extensions.
func InjectTrace(ctx context.Context, e *event.Event) {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	for _, name := range []string{extTraceParent, extTraceState} {
		if v := c.Get(name); v != "" {
			e.SetExtension(name, v)
		}
	}
}

// ContextWithTrace returns ctx carrying the remote span context of d, so the
// spans a handler starts continue the trace that produced the event.
func ContextWithTrace(ctx context.Context, d *Decoded) context.Context {
	if d.TraceParent == "" {
		return ctx
	}
	c := propagation.MapCarrier{extTraceParent: d.TraceParent}
	if d.TraceState != "" {
		c[extTraceState] = d.TraceState
	}
	return propagator.Extract(ctx, c)
}
