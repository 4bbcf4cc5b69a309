package projector

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
)

const instrumentation = "github.com/argosyproj/argosy/projector"

// Option configures a Service, Runner or Folder. Each takes the options
// that concern it and ignores the rest.
type Option func(*options)

type options struct {
	events.Common
	group      string
	topics     events.Topics
	maxRecords int
	listen     string
	api        http.Handler
	apiTLS     *tls.Config
	leave      time.Duration
	progress   func(Progress)
}

// DefaultGroup is the consumer group projector replicas share by default.
const DefaultGroup = "argosy-projector"

func newOptions(opts []Option) options {
	o := options{group: DefaultGroup, topics: events.DefaultTopics(""), maxRecords: 10_000, leave: 10 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	o.SetDefaults()
	return o
}

func (o options) tracer() trace.Tracer { return o.Tracers.Tracer(instrumentation) }

// WithClockMargin sets how far a Service assumes the brokers' clocks may
// be behind its own (events.Common.ClockMargin; default 2 s). An event is
// folded about this long after its append, once the trust topic has been
// read past its log time (docs/design.md#trust): a smaller margin is a
// fresher view, correct only while the clocks keep within it.
func WithClockMargin(d time.Duration) Option { return func(o *options) { o.ClockMargin = d } }

// WithLogger logs to l; the default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.Log = l } }

// WithTracerProvider starts spans with tp rather than the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.Tracers = tp } }

// WithMeterProvider records metrics with mp rather than the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.Meters = mp } }

// WithGroup names the consumer group the replicas share; the default is
// DefaultGroup.
func WithGroup(group string) Option { return func(o *options) { o.group = group } }

// WithTopics names the topics; the default is events.DefaultTopics("").
func WithTopics(t events.Topics) Option { return func(o *options) { o.topics = t } }

// WithMaxRecords bounds the records of one fold step; the default is
// 10,000.
func WithMaxRecords(n int) Option { return func(o *options) { o.maxRecords = n } }

// WithClientOpts adds options to each Kafka client the component makes,
// by the client's name ("projector", "trust" or "deadletter"): telemetry
// hooks, say.
func WithClientOpts(f func(name string) []kgo.Opt) Option {
	return func(o *options) { o.ClientOpts = f }
}

// WithDecoderOptions adds options to every decoder the Service builds. Only a
// broker that cannot stamp records with its LogAppendTime calls for one:
// argosy dev's embedded broker, with events.AcceptCreateTime (it sets
// each batch's time itself as it takes it; docs/dev.md).
func WithDecoderOptions(opts ...events.Option) Option {
	return func(o *options) { o.DecoderOpts = append(o.DecoderOpts, opts...) }
}

// WithReadAPI makes a Service serve h, the read API (package
// projector/read serves the views of the Service's store), on address
// listen while it runs. Without it the Service serves nothing, and its
// owner may mount the read API where it likes.
func WithReadAPI(listen string, h http.Handler) Option {
	return func(o *options) { o.listen, o.api = listen, h }
}

// WithReadAPITLS serves the read API of WithReadAPI over TLS with cfg
// (httpserve.Certificate's, which follows renewed files).
func WithReadAPITLS(cfg *tls.Config) Option { return func(o *options) { o.apiTLS = cfg } }

// WithLeaveTimeout bounds how long a Service waits, once it stops, for its
// consumer group client to leave the group; the default is 10 s. See
// Runner.Close.
func WithLeaveTimeout(d time.Duration) Option { return func(o *options) { o.leave = d } }
