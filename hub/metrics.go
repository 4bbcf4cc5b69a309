package hub

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/events"
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
	desc := metric.WithDescription
	return &instruments{
		requests: events.Instrument(m.Int64Counter("argosy.hub.requests", desc("API calls, by action and status code."))),
		events:   events.Instrument(m.Int64Counter("argosy.hub.events.written", desc("Config events the hub appended durably."))),
		oidc: events.Instrument(m.Int64Counter("argosy.hub.oidc.verifications",
			desc("OIDC ID tokens presented, by outcome: allowed, no_role, expired, invalid, unavailable."))),
		unauth: events.Instrument(m.Int64Counter("argosy.hub.unauthenticated", desc("Calls with no credential the hub accepts, which are counted here rather than audited one by one: "+
			"by outcome, refused (401) or limited (429, past the per-address limit)."))),
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
