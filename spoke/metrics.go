package spoke

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/events"
)

// instruments are an agent's own metrics, made from the meter provider
// its options name; package events counts what it publishes and reads.
type instruments struct {
	acks   metric.Int64Counter
	pruned metric.Int64Counter
	// open is the number of syncs and rollbacks queued or running, and
	// ended those that ended, by Argo CD's phase.
	open  metric.Int64Gauge
	ended metric.Int64Counter
	// queries counts the live questions read, by query and outcome.
	queries metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(instrumentation)
	return &instruments{
		acks: events.Instrument(m.Int64Counter("argosy.spoke.acknowledged",
			metric.WithDescription("Config events the agent acknowledged, by result (applied or rejected) and rejection code."))),
		pruned: events.Instrument(m.Int64Counter("argosy.spoke.state.pruned",
			metric.WithDescription("Records of operations and deleted objects the agent forgot from its state."))),
		open: events.Instrument(m.Int64Gauge("argosy.spoke.operations.open",
			metric.WithDescription("Syncs and rollbacks queued for Argo CD or running on it."))),
		ended: events.Instrument(m.Int64Counter("argosy.spoke.operations.completed",
			metric.WithDescription("Syncs and rollbacks that ended, by Argo CD's phase."))),
		queries: events.Instrument(m.Int64Counter("argosy.spoke.queries",
			metric.WithDescription("Live questions the agent read, by query and outcome: answered, a refusal code, expired or repeated (not answered)."))),
	}
}

func (in *instruments) operations(ctx context.Context, open int) {
	if in.open != nil {
		in.open.Record(ctx, int64(open))
	}
}

func (in *instruments) completed(ctx context.Context, phase string) {
	if in.ended != nil {
		in.ended.Add(ctx, 1, metric.WithAttributes(attribute.String("phase", phase)))
	}
}

func (in *instruments) acknowledged(ctx context.Context, code string) {
	if in.acks == nil {
		return
	}
	result := "applied"
	if code != "" {
		result = "rejected"
	}
	in.acks.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result), attribute.String("code", code)))
}

func (in *instruments) queried(ctx context.Context, query, outcome string) {
	if in.queries != nil {
		in.queries.Add(ctx, 1, metric.WithAttributes(attribute.String("query", query), attribute.String("outcome", outcome)))
	}
}
