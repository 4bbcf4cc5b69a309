package system

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// Check reports whether a part can do its work now: nil, or what it
// cannot reach. internal/telemetry's Handler takes it as it is.
type Check = func(context.Context) error

// Option configures a System.
type Option func(*options)

type options struct {
	events.Common
	prefix    string
	listen    string
	listener  net.Listener
	tls       *tls.Config
	tokens    []auth.Token
	tokenFile string
	store     *sqlstore.Store
	read      []read.Option
	dashboard bool
	web       []web.Option
	fold      bool
	foldGroup string
	foldConn  []kgo.Opt
	hub       []hub.Option
	checks    []Check
	opsAddr   string
	ops       func(ready Check) http.Handler
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	o.SetDefaults()
	return o
}

// WithTopicPrefix names the install: its topics (events.DefaultTopics),
// the hub's transactional ids (events.HubTransactionalPrefix) and the
// fold's consumer group (events.ProjectorGroup) all begin with prefix
// (default "").
func WithTopicPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithListen serves the API on addr, which New binds (":0" for any free
// port; Addr says which).
func WithListen(addr string) Option { return func(o *options) { o.listen = addr } }

// WithListener serves the API on ln, which is the System's from New on:
// Run closes it, and so does New when it fails.
func WithListener(ln net.Listener) Option { return func(o *options) { o.listener = ln } }

// WithTLS serves the API over TLS with cfg (hub.WithTLS).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithTokens makes the hub accept these bearer tokens.
func WithTokens(tokens ...auth.Token) Option {
	return func(o *options) { o.tokens = append(o.tokens, tokens...) }
}

// WithTokenFile makes the hub take its tokens and OIDC section from the
// tokens file at path and follow it (hub.WithTokenFile); not with
// WithTokens.
func WithTokenFile(path string) Option { return func(o *options) { o.tokenFile = path } }

// WithStore serves the projector's read API over store beside the hub's
// routes, with opts; the store's Ping joins the readiness checks. The
// caller opens and closes store.
func WithStore(store *sqlstore.Store, opts ...read.Option) Option {
	return func(o *options) { o.store, o.read = store, append(o.read, opts...) }
}

// WithDashboard serves the web dashboard at /, over WithStore's store,
// with opts.
func WithDashboard(opts ...web.Option) Option {
	return func(o *options) { o.dashboard, o.web = true, append(o.web, opts...) }
}

// WithFold also runs a projector replica in the process, folding the log
// into WithStore's store, in consumer group group (empty: the topic
// prefix's events.ProjectorGroup). Its readiness joins the checks.
func WithFold(group string) Option { return func(o *options) { o.fold, o.foldGroup = true, group } }

// WithFoldConn connects the fold to Kafka with conn rather than New's
// conn: as another Kafka user, say.
func WithFoldConn(conn []kgo.Opt) Option { return func(o *options) { o.foldConn = conn } }

// WithLogger sets the logger (default: none); each part logs with its
// component's name.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.Log = l } }

// WithTracerProvider sets the tracer provider (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.Tracers = tp } }

// WithMeterProvider sets the meter provider (default: the global one).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.Meters = mp } }

// WithClientOpts adds options, by client name, to every Kafka client the
// hub and the fold make (telemetry hooks, say).
func WithClientOpts(f func(name string) []kgo.Opt) Option {
	return func(o *options) { o.ClientOpts = f }
}

// WithDecoderOptions adds options to every decoder the hub and the fold
// build (events.AcceptCreateTime, for a broker that keeps the producer's
// record time).
func WithDecoderOptions(opts ...events.Option) Option {
	return func(o *options) { o.DecoderOpts = append(o.DecoderOpts, opts...) }
}

// WithHubOptions passes opts to hub.New after the System's own, so that
// they win: the hub's own knobs (idempotency window, audit of reads,
// unauthenticated limit, a client hook for the hub alone).
func WithHubOptions(opts ...hub.Option) Option {
	return func(o *options) { o.hub = append(o.hub, opts...) }
}

// WithReadyCheck adds c to the readiness checks (Ready).
func WithReadyCheck(c Check) Option { return func(o *options) { o.checks = append(o.checks, c) } }

// WithOpsServer serves handler(Ready), which New makes, on addr, plain
// HTTP beside the API: cmd gives internal/telemetry's Handler, whose
// /healthz, /readyz and /metrics the probes and Prometheus scrape.
func WithOpsServer(addr string, handler func(ready Check) http.Handler) Option {
	return func(o *options) { o.opsAddr, o.ops = addr, handler }
}
