package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/httpserve"
)

const instrumentation = "github.com/argosyproj/argosy/hub"

// Defaults of the server's options.
const (
	// DefaultIdempotencyWindow is how long an idempotency key is honoured.
	DefaultIdempotencyWindow = 24 * time.Hour
	// DefaultTransactionalPrefix begins the transactional id of each config
	// partition's writer; every replica of a hub uses the same ids.
	DefaultTransactionalPrefix = "argosy-hub-config-"
	// DefaultNamespace is where Argo CD's objects go when a manifest
	// names no namespace.
	DefaultNamespace = "argocd"
	// DefaultPlaceInterval is how often the placer goes over every
	// placement even when the log has not moved.
	DefaultPlaceInterval = 30 * time.Second
	// Source is the CloudEvents source of the hub's events.
	Source = "//argosy.dev/hub"
)

// Server is the hub: the write API, with the read API it is given beside
// it, over the log. It keeps no state of its own; any number of replicas
// may serve the same topics.
type Server struct {
	conn    []kgo.Opt
	signer  *events.Signer
	anchors []events.Key
	auth    *authenticator
	o       options
	tracer  trace.Tracer
	inst    *instruments
	// unauth limits failed authentications per source address.
	unauth *sourceLimiter

	ledger *ledger
	writer *writer
	audit  *events.Producer
	keys   *events.Registry
	// querier asks clusters live questions (query.go).
	querier *querier
	mux     *http.ServeMux
	methods *methods
	ready   chan struct{}
	placer  *placer
	// partitions is the config topic's partition count.
	partitions int32
	// admin is Run's admin client while it runs, for Ready.
	admin atomic.Pointer[kgo.Client]
}

// ErrNotRunning is Ready's answer when Run is not running.
var ErrNotRunning = errors.New("hub: not running")

// Ready reports whether the hub can take writes now: Run is running, its
// ledger has read the log as far as it stood at start, and a Kafka broker
// answers. The metrics endpoint's /readyz serves it.
func (s *Server) Ready(ctx context.Context) error {
	c := s.admin.Load()
	if c == nil {
		return ErrNotRunning
	}
	select {
	case <-s.ready:
	default:
		return errors.New("hub: still reading the log")
	}
	if err := c.Ping(ctx); err != nil {
		return fmt.Errorf("hub: kafka: %w", err)
	}
	return nil
}

// New returns a hub that connects to Kafka with conn, signs with signer
// (its key must be one of anchors, the hub keys readers trust), and accepts
// the bearer tokens in tokens. It takes every Option.
func New(conn []kgo.Opt, signer *events.Signer, anchors []events.Key, tokens []auth.Token, opts ...Option) (*Server, error) {
	o := newOptions(opts)
	var errs []error
	if len(conn) == 0 {
		errs = append(errs, errors.New("kafka connection options are required"))
	}
	if signer == nil {
		errs = append(errs, errors.New("a signing key is required"))
	} else if !slices.ContainsFunc(anchors, func(k events.Key) bool { return k.ID == signer.KeyID() }) {
		errs = append(errs, fmt.Errorf("the signing key %s is not among the trust anchors", signer.KeyID()))
	}
	inst := newInstruments(o.Meters)
	authn, err := o.authenticator(tokens, auth.WithLogger(o.Log), auth.WithVerified(inst.oidcVerified))
	errs = append(errs, err)
	var a *authenticator
	if err == nil {
		a = &authenticator{Authenticator: authn}
		if signer != nil {
			a.sessions, err = newSessions(signer, o.now)
			errs = append(errs, err)
		}
	}
	if (o.listen == "") == (o.listener == nil) {
		errs = append(errs, errors.New("give either an address or a listener to serve on"))
	}
	if o.window <= 0 {
		errs = append(errs, errors.New("the idempotency window must be positive"))
	}
	for _, role := range []events.Topic{events.TopicConfig, events.TopicDesired, events.TopicAudit, events.TopicTrust, events.TopicPlacements} {
		if o.topics[role] == "" {
			errs = append(errs, fmt.Errorf("no %s topic configured", role))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	s := &Server{conn: conn, signer: signer, anchors: anchors, auth: a, o: o,
		tracer: o.Tracers.Tracer(instrumentation), inst: inst, ready: make(chan struct{}),
		unauth: newSourceLimiter(o.now, o.unauthRate, o.unauthBurst)}
	s.mux = s.routes()
	s.methods = newMethods(s.o.read != nil)
	s.placer = &placer{s: s, pokes: make(chan struct{}, 1), period: o.placeEvery}
	return s, nil
}

// Run serves the API until ctx ends, then stops every part and returns
// nil; or it returns the first error a part could not recover from.
func (s *Server) Run(ctx context.Context) error {
	started := s.o.now()
	var clients []*kgo.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	client := func(name string, opts ...kgo.Opt) (*kgo.Client, error) {
		c, err := kgo.NewClient(slices.Concat(s.conn, opts, s.o.ClientOpts(name))...)
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	admClient, err := client("hub-admin")
	if err != nil {
		return err
	}
	adm := kadm.NewClient(admClient)
	s.admin.Store(admClient)
	defer s.admin.Store(nil)
	if s.partitions, err = ping(ctx, adm, s.o.topics); err != nil {
		return err
	}
	s.keys = events.NewFollowingRegistry(s.anchors...)
	// What the hub signs names how far it had read the trust topic, so
	// that readers judge it without waiting out the clock margin.
	signer := s.signer.WithTrustOffset(s.keys.TrustRead)
	auditClient, err := client("hub-audit", events.ProducerOpts(nil)...)
	if err != nil {
		return err
	}
	if s.audit, err = events.NewProducer(auditClient, signer, s.o.topics, s.o.Events()...); err != nil {
		return err
	}
	follower, err := s.trustFollower(client)
	if err != nil {
		return err
	}
	if s.ledger, err = s.newLedger(); err != nil {
		return err
	}
	ranges, err := s.ledger.plan(ctx, adm, s.o.now())
	if err != nil {
		return err
	}
	ledgerClient, err := client("hub-ledger", events.RangeConsumeOpts()...)
	if err != nil {
		return err
	}
	s.writer = &writer{conn: s.conn, clientOpts: s.o.ClientOpts, signer: signer, topics: s.o.topics,
		txnPrefix: s.o.txnPrefix, ledger: s.ledger, adm: adm, eventOpts: s.o.Events(), owners: map[string]*owner{}}
	defer s.writer.close()
	if s.querier, err = s.newQuerier(client, signer); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.querier.run(gctx) })
	g.Go(func() error { return follower.Run(gctx) })
	caughtUp := make(chan struct{})
	g.Go(func() error { return s.ledger.follow(gctx, ledgerClient, ranges, caughtUp) })
	g.Go(func() error { return s.catchUp(gctx, caughtUp) })
	g.Go(func() error { return s.placer.run(gctx) })
	g.Go(func() error { return s.publishKey(gctx, started) })
	g.Go(func() error { return s.auth.Run(gctx) })
	var serve []httpserve.Option
	if s.o.tls != nil {
		serve = append(serve, httpserve.WithTLS(s.o.tls))
	}
	g.Go(func() error {
		if s.o.listener != nil {
			return httpserve.Serve(gctx, s.o.listener, s, serve...)
		}
		return httpserve.Run(gctx, s.o.listen, s, serve...)
	})
	return g.Wait()
}

func (s *Server) trustFollower(client func(string, ...kgo.Opt) (*kgo.Client, error)) (*events.TrustFollower, error) {
	trustDec, err := events.NewDecoder(events.NewVerifier(s.keys.Anchors()), append([]events.Option{events.WithTopics(s.o.topics)}, s.o.DecoderOpts...)...)
	if err != nil {
		return nil, err
	}
	// The projector dead-letters bad trust events; the hub only logs them.
	trustIn, err := events.NewIntake(trustDec, nil, s.o.Events()...)
	if err != nil {
		return nil, err
	}
	trustClient, err := client("hub-trust", events.TrustConsumeOpts(s.o.topics)...)
	if err != nil {
		return nil, err
	}
	return events.NewTrustFollower(trustClient, s.o.topics[events.TopicTrust], trustIn, s.keys, s.o.Events()...)
}

// newLedger makes the hub's ledger, which judges what it reads by the
// keys the trust topic's follower gives s.keys.
func (s *Server) newLedger() (*ledger, error) {
	in, err := s.intake()
	if err != nil {
		return nil, err
	}
	l := newLedger(s.o.topics, in, s.o.window, s.o.Log)
	l.lag = s.o.ledgerLag
	l.sessions = s.auth.sessions
	return l, nil
}

// intake decodes what the hub reads by the keys the trust topic's
// follower gives s.keys; it logs what it refuses.
func (s *Server) intake() (*events.Intake, error) {
	dec, err := events.NewDecoder(events.NewVerifier(s.keys), append([]events.Option{events.WithTopics(s.o.topics)}, s.o.DecoderOpts...)...)
	if err != nil {
		return nil, err
	}
	return events.NewIntake(dec, nil, s.o.Events()...)
}

// newQuerier makes the hub's querier: its questions are signed by
// signer and go to the partition the hub names, and the answers it reads
// are judged by the keys the trust topic's follower gives s.keys.
func (s *Server) newQuerier(client func(string, ...kgo.Opt) (*kgo.Client, error), signer *events.Signer) (*querier, error) {
	out, err := client("hub-queries", append(events.ProducerOpts(nil), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	answers, err := client("hub-answers", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	in, err := s.intake()
	if err != nil {
		return nil, err
	}
	return newQuerier(signer, out, answers, in, s.o.topics, s.o.Log), nil
}

// catchUp marks the hub ready once the ledger has read what the log held
// when it started (caughtUp closed): the sessions ended on the audit topic
// too.
func (s *Server) catchUp(ctx context.Context, caughtUp <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return nil
	case <-caughtUp:
	}
	// The trust topic too, to now: a replica started on a key rotated out
	// meanwhile learns it before it serves, and writes nothing with it.
	if err := s.keys.WaitCovers(ctx, s.o.now()); err != nil {
		return nil //nolint:nilerr // ctx ended: the hub is stopping
	}
	close(s.ready)
	s.o.Log.InfoContext(ctx, "hub ready: the ledger has read the log")
	return nil
}

// ping checks that Kafka answers, takes the credentials and has the
// topics, and returns the config topic's partition count.
func ping(ctx context.Context, adm *kadm.Client, topics events.Topics) (int32, error) {
	names := []string{topics[events.TopicConfig], topics[events.TopicDesired], topics[events.TopicAudit], topics[events.TopicTrust], topics[events.TopicPlacements]}
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return 0, fmt.Errorf("hub: kafka: %w", err)
	}
	for _, n := range names {
		t, ok := td[n]
		if !ok || t.Err != nil {
			return 0, fmt.Errorf("hub: topic %s: %w", n, errors.Join(t.Err, errors.New("missing")))
		}
	}
	c, d := td[topics[events.TopicConfig]], td[topics[events.TopicDesired]]
	if len(c.Partitions) != len(d.Partitions) {
		return 0, fmt.Errorf("hub: %s has %d partitions and %s %d: they must have as many", c.Topic, len(c.Partitions), d.Topic, len(d.Partitions))
	}
	return int32(len(c.Partitions)), nil
}

// Option configures a Server.
type Option func(*options)

type options struct {
	events.Common
	topics     events.Topics
	listen     string
	listener   net.Listener
	tls        *tls.Config
	read       http.Handler
	dashboard  *web.Handler
	txnPrefix  string
	window     time.Duration
	namespace  string
	now        func() time.Time
	auditReads bool
	// unauthRate and unauthBurst limit failed authentications per source
	// address (WithUnauthenticatedLimit).
	unauthRate  float64
	unauthBurst int
	ledgerLag   time.Duration // tests only: see export_test.go
	placeEvery  time.Duration
	oidc        *auth.OIDC
	tokenFile   string
}

func newOptions(opts []Option) options {
	o := options{topics: events.DefaultTopics(""), txnPrefix: DefaultTransactionalPrefix,
		window: DefaultIdempotencyWindow, namespace: DefaultNamespace, now: time.Now, auditReads: true, placeEvery: DefaultPlaceInterval,
		unauthRate: DefaultUnauthenticatedRate, unauthBurst: DefaultUnauthenticatedBurst}
	for _, opt := range opts {
		opt(&o)
	}
	o.SetDefaults()
	return o
}

// WithTopics sets the topic names (default events.DefaultTopics("")).
func WithTopics(t events.Topics) Option { return func(o *options) { o.topics = t } }

// WithSigForm sets the form the hub signs its events in
// (events.Common.SigForm): events.SigDSSE while some readers are older
// than the compact form.
func WithSigForm(f events.SigForm) Option { return func(o *options) { o.SigForm = f } }

// WithListen sets the address the API is served on.
func WithListen(addr string) Option { return func(o *options) { o.listen = addr } }

// WithListener serves the API on ln, which Run closes.
func WithListener(ln net.Listener) Option { return func(o *options) { o.listener = ln } }

// WithTLS serves the API over TLS with cfg (httpserve.WithTLS): with
// httpserve.Certificate's TLSConfig, a certificate renewed in its files is
// presented without a restart.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithReadAPI serves h (the projector's read API, projector/read) for the
// read routes beside the hub's own, behind the same authentication.
func WithReadAPI(h http.Handler) Option { return func(o *options) { o.read = h } }

// WithDashboard serves d, the web dashboard, at / with its login page: the
// same principals as the API, by a session cookie (see SessionCookie),
// which any replica serves and a logout ends on every one.
func WithDashboard(d *web.Handler) Option { return func(o *options) { o.dashboard = d } }

// WithLogger sets the logger (default: none).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.Log = l } }

// WithTracerProvider sets the tracer provider (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.Tracers = tp } }

// WithMeterProvider sets the meter provider (default: the global one).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.Meters = mp } }

// WithClientOpts adds options, by client name, to every Kafka client the
// hub makes (telemetry hooks, say). No two clients open at once share a
// name: each config partition's writer is hub-writer-<partition>, the
// placements' hub-writer-placements.
func WithClientOpts(f func(name string) []kgo.Opt) Option {
	return func(o *options) { o.ClientOpts = f }
}

// WithDecoderOptions adds options to every decoder the hub builds. Only a
// broker that cannot stamp records with its LogAppendTime calls for one:
// argosy dev's embedded broker, with events.AcceptCreateTime (it sets
// each batch's time itself as it takes it; docs/dev.md).
func WithDecoderOptions(opts ...events.Option) Option {
	return func(o *options) { o.DecoderOpts = append(o.DecoderOpts, opts...) }
}

// WithOIDC makes the hub accept ID tokens of an OpenID Connect issuer as
// bearer tokens too (the tokens file's oidc section; docs/hub.md).
func WithOIDC(cfg auth.OIDC) Option { return func(o *options) { o.oidc = &cfg } }

// WithTokenFile makes the hub take its tokens and its OIDC section from
// the tokens file at path, and follow the file while it runs: each replica
// reads it again every second, and a change to its tokens (one added,
// removed, or given another role or scope) or to its OIDC groups applies
// at once to calls and to the dashboard sessions made with them
// (auth.Open). The other settings of the oidc section take a restart.
// New's tokens and WithOIDC must not be given with it.
func WithTokenFile(path string) Option { return func(o *options) { o.tokenFile = path } }

// authenticator returns the authenticator of the tokens given to New and
// WithOIDC, or of the tokens file.
func (o *options) authenticator(tokens []auth.Token, opts ...auth.Option) (*auth.Authenticator, error) {
	if o.tokenFile == "" {
		return auth.New(tokens, o.oidc, opts...)
	}
	if len(tokens) > 0 || o.oidc != nil {
		return nil, errors.New("give the tokens either to New and WithOIDC, or by WithTokenFile, not both")
	}
	return auth.Open(o.tokenFile, opts...)
}

// WithTransactionalPrefix sets the prefix of the config writers'
// transactional ids (default DefaultTransactionalPrefix). Replicas of one
// hub must share it.
func WithTransactionalPrefix(p string) Option { return func(o *options) { o.txnPrefix = p } }

// WithIdempotencyWindow sets how long idempotency keys are honoured
// (default DefaultIdempotencyWindow). The hub reads this much of the config
// topic when it starts.
func WithIdempotencyWindow(d time.Duration) Option { return func(o *options) { o.window = d } }

// WithUnauthenticatedLimit sets how many calls without a valid credential
// one source address may make: burst at once, then perSecond (defaults
// DefaultUnauthenticatedRate and DefaultUnauthenticatedBurst). Values ≤ 0
// keep the defaults.
func WithUnauthenticatedLimit(perSecond float64, burst int) Option {
	return func(o *options) {
		if perSecond > 0 && burst > 0 {
			o.unauthRate, o.unauthBurst = perSecond, burst
		}
	}
}

// WithAuditReads sets whether read calls are audited too (default true).
func WithAuditReads(v bool) Option { return func(o *options) { o.auditReads = v } }

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithPlaceInterval sets how often the placer goes over every placement
// even when the log has not moved (default DefaultPlaceInterval).
func WithPlaceInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.placeEvery = d
		}
	}
}
