package events

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a component of this package: a Producer, ConfigWriter,
// DeadLetter, Intake, Reader or TrustFollower. Each takes the options that
// concern it and ignores the rest, so that a caller can hand one list to
// all of them.
type Option func(*options)

type options struct {
	tracers trace.TracerProvider
	meters  metric.MeterProvider
	log     *slog.Logger
	margin  time.Duration
	owners  map[string]bool
}

// WithTracerProvider makes the component start its spans with tp rather
// than the global provider. A process that runs several components side by
// side (a simulated fleet of agents, say) gives each its own.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracers = tp }
}

// WithMeterProvider makes the component record its metrics with mp rather
// than the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meters = mp }
}

// WithLogger makes the component log to l; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithClockMargin sets how far a TrustFollower assumes the broker's clock
// may be behind the local one; see TrustFollower. The default is 2 s.
func WithClockMargin(d time.Duration) Option {
	return func(o *options) { o.margin = d }
}

// WithTrustOwners makes a TrustFollower read only the trust events of
// these owners (a trust event's key names its owner: a cluster, or "hub"
// for the hub's keys) and pass over the rest unread. An agent, which
// verifies only what the hub signs, follows only "hub": it then neither
// verifies nor keeps the keys and reports of every other cluster of the
// fleet. Passing over trust events can only make a registry know fewer
// keys, never accept more. The default is every owner.
func WithTrustOwners(owners ...string) Option {
	return func(o *options) {
		o.owners = map[string]bool{}
		for _, w := range owners {
			o.owners[w] = true
		}
	}
}

func newOptions(opts []Option) options {
	o := options{margin: 2 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.tracers == nil {
		o.tracers = otel.GetTracerProvider()
	}
	if o.meters == nil {
		o.meters = otel.GetMeterProvider()
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o options) tracer() trace.Tracer { return o.tracers.Tracer(instrumentation) }
