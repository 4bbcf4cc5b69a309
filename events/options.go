package events

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Common is what every component of Argosy is configured with alike: where
// it logs, traces and counts, and how it reads Kafka. It is declared once,
// here, and the options of each component embed it (this package's
// Option, and those of the agent, the projector, the hub, the read API and
// the dashboard), so that each of these settings means one thing
// everywhere and has its default in one place, SetDefaults. A component's
// WithSigForm makes a Producer (and the ConfigWriter built on it) sign in
// form f: SigDSSE keeps the DSSE envelope and a dataschema on every event,
// for a fleet whose readers are upgraded after its writers.
func WithSigForm(f SigForm) Option { return func(o *options) { o.SigForm = f } }

// WithLogger, WithTracerProvider and so on each set a field of it.
type Common struct {
	// Log is where the component logs; nil discards.
	Log *slog.Logger
	// Tracers starts the component's spans; nil is the global provider.
	Tracers trace.TracerProvider
	// Meters makes the component's metrics; nil is the global provider.
	Meters metric.MeterProvider
	// ClockMargin is how far the component assumes the brokers' clocks
	// may be behind its own; ≤ 0 is DefaultClockMargin. See TrustFollower.
	ClockMargin time.Duration
	// ClientOpts adds options to each Kafka client the component makes,
	// by the client's name: telemetry hooks, say. nil adds none.
	ClientOpts func(name string) []kgo.Opt
	// DecoderOpts are added to every Decoder the component builds. Only a
	// broker that cannot stamp records with its LogAppendTime calls for
	// one: argosy dev's embedded broker, with AcceptCreateTime (it sets
	// each batch's time itself as it takes it; docs/dev.md).
	DecoderOpts []Option
	// SigForm is the form in which the component's producers write
	// signatures: SigCompact (the zero value) or, while some readers are
	// older than it, SigDSSE (docs/design.md, Signatures).
	SigForm SigForm
}

// DefaultClockMargin is Common.ClockMargin's default.
const DefaultClockMargin = 2 * time.Second

// SetDefaults sets each field of c that is not set to its default: a
// logger that discards, OpenTelemetry's global tracer and meter
// providers, DefaultClockMargin and no client options.
func (c *Common) SetDefaults() {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Tracers == nil {
		c.Tracers = otel.GetTracerProvider()
	}
	if c.Meters == nil {
		c.Meters = otel.GetMeterProvider()
	}
	if c.ClockMargin <= 0 {
		c.ClockMargin = DefaultClockMargin
	}
	if c.ClientOpts == nil {
		c.ClientOpts = func(string) []kgo.Opt { return nil }
	}
}

// Events are the options that hand c to the components of this package
// that c's owner makes: c itself, then its decoder options, which every
// component but a Decoder ignores. The first sets every field of the
// bundle, so an option meant to change one of them comes after these.
func (c Common) Events() []Option {
	return append([]Option{func(o *options) { o.Common = c }}, c.DecoderOpts...)
}

// Instrument returns the instrument that one of a metric.Meter's methods
// made, and hands its error, if any, to OpenTelemetry's error handler:
// every component makes its instruments so. The meter returns an
// instrument to record on even with the error.
func Instrument[T any](instrument T, err error) T {
	if err != nil {
		otel.Handle(err)
	}
	return instrument
}

// Option configures a component of this package: a Producer, ConfigWriter,
// DeadLetter, Decoder, Intake, Reader or TrustFollower. Each takes the
// options that concern it and ignores the rest, so that a caller can hand
// one list to all of them.
type Option func(*options)

type options struct {
	Common
	owners  map[string]bool
	decoder decoderConfig
	reader  readerConfig
}

// WithTracerProvider makes the component start its spans with tp rather
// than the global provider. A process that runs several components side by
// side (a simulated fleet of agents, say) gives each its own.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.Tracers = tp }
}

// WithMeterProvider makes the component record its metrics with mp rather
// than the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.Meters = mp }
}

// WithLogger makes the component log to l; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.Log = l }
}

// WithClockMargin sets how far a TrustFollower assumes the broker's clock
// may be behind the local one; see TrustFollower. The default, and what
// d ≤ 0 keeps, is DefaultClockMargin.
func WithClockMargin(d time.Duration) Option {
	return func(o *options) { o.ClockMargin = d }
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
	o := options{decoder: decoderConfig{maxBytes: MaxEventBytes, maxAge: DefaultMaxAge, maxSkew: DefaultMaxSkew}}
	for _, f := range opts {
		f(&o)
	}
	o.SetDefaults()
	return o
}

func (o options) tracer() trace.Tracer { return o.Tracers.Tracer(instrumentation) }
