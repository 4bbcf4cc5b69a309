package hub

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are the hub's metrics.
type instruments struct {
	requests metric.Int64Counter
	events   metric.Int64Counter
	oidc     metric.Int64Counter
	unauth   metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(instrumentation)
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		if err != nil {
			otel.Handle(err)
		}
		return c
	}
	return &instruments{
		requests: counter("argosy.hub.requests", "API calls, by action and status code."),
		events:   counter("argosy.hub.events.written", "Config events the hub appended durably."),
		oidc:     counter("argosy.hub.oidc.verifications", "OIDC ID tokens presented, by outcome: allowed, no_role, expired, invalid, unavailable."),
		unauth: counter("argosy.hub.unauthenticated", "Calls with no credential the hub accepts, which are counted here rather than audited one by one: "+
			"by outcome, refused (401) or limited (429, past the per-address limit)."),
	}
}

func (i *instruments) request(ctx context.Context, action string, status int) {
	i.requests.Add(ctx, 1, metric.WithAttributes(attribute.String("action", action), attribute.String("code", strconv.Itoa(status))))
}

func (i *instruments) written(ctx context.Context, n int) {
	if n > 0 {
		i.events.Add(ctx, int64(n))
	}
}

func (i *instruments) oidcVerified(ctx context.Context, outcome string) {
	i.oidc.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (i *instruments) unauthenticated(ctx context.Context, outcome string) {
	i.unauth.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}
