package projector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/httpserve"
)

// Service is a projector replica: the trust follower that keeps its key
// registry up to date, the Runner that folds the log into its Store, and,
// with WithReadAPI, the read API that serves the views, behind one Run.
// `argosy projector` is a thin command over it; anything else that must
// project the log (a development environment, say) runs the same code.
type Service struct {
	conn    []kgo.Opt
	store   Store
	anchors []events.Key
	opts    []Option
	o       options
	// kafka is Run's dead-letter client while it runs, for Ready.
	kafka atomic.Pointer[kgo.Client]
}

// ErrNotRunning is Ready's answer when Run is not running.
var ErrNotRunning = errors.New("projector: not running")

// Ready reports whether the replica can read the log now: Run is running
// and a Kafka broker answers. The metrics endpoint's /readyz serves it,
// with the store's own check (sqlstore.Store.Ping) beside it.
func (s *Service) Ready(ctx context.Context) error {
	c := s.kafka.Load()
	if c == nil {
		return ErrNotRunning
	}
	if err := c.Ping(ctx); err != nil {
		return fmt.Errorf("projector: kafka: %w", err)
	}
	return nil
}

// NewService returns a Service that folds into store, connecting to Kafka
// with conn (seed brokers, TLS, SASL), and trusting the trust events that
// anchors sign (the hub's signing keys, configured out of band). It takes
// every Option. While it runs, a store that is also a BacklogQuery (as
// sqlstore's is) gives the per-cluster gauges of docs/projector.md.
func NewService(conn []kgo.Opt, store Store, anchors []events.Key, opts ...Option) (*Service, error) {
	o := newOptions(opts)
	errs := checkReader(conn, store, anchors, o)
	if o.group == "" {
		errs = append(errs, errors.New("a consumer group is required"))
	}
	if (o.listen == "") != (o.api == nil) {
		errs = append(errs, errors.New("the read API needs both an address and a handler"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	return &Service{conn: conn, store: store, anchors: anchors, opts: opts, o: o}, nil
}

// Run projects until ctx ends, then stops every part and returns nil; or
// it returns the first error a part could not recover from. It checks
// first that Kafka takes the connection's credentials.
func (s *Service) Run(ctx context.Context) error {
	clients := &clientSet{conn: s.conn, o: s.o}
	defer clients.close()
	dlqClient, err := clients.new("deadletter", events.ProducerOpts(nil)...)
	if err != nil {
		return err
	}
	if err := ping(ctx, dlqClient); err != nil {
		return err
	}
	s.kafka.Store(dlqClient)
	defer s.kafka.Store(nil)
	dlq, err := events.NewDeadLetter(dlqClient, s.o.topics[events.TopicDeadLetter], s.o.Events()...)
	if err != nil {
		return err
	}
	trustClient, err := clients.new("trust", events.TrustConsumeOpts(s.o.topics)...)
	if err != nil {
		return err
	}
	follower, in, err := s.o.trusted(s.anchors, trustClient, dlq)
	if err != nil {
		return err
	}
	runner, err := NewRunner(s.conn, s.store, in, s.opts...)
	if err != nil {
		return err
	}
	defer s.leave(ctx, runner)
	if q, ok := s.store.(BacklogQuery); ok {
		defer s.observeBacklogs(q)()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return follower.Run(gctx) })
	g.Go(func() error { return runner.Run(gctx) })
	if s.o.api != nil {
		var serve []httpserve.Option
		if s.o.apiTLS != nil {
			serve = append(serve, httpserve.WithTLS(s.o.apiTLS))
		}
		g.Go(func() error { return httpserve.Run(gctx, s.o.listen, s.o.api, serve...) })
	}
	return g.Wait()
}

// clientSet makes the Kafka clients of one run, each on the connection
// options and the client options of its name, and closes them all.
type clientSet struct {
	conn []kgo.Opt
	o    options
	all  []*kgo.Client
}

func (cs *clientSet) new(name string, opts ...kgo.Opt) (*kgo.Client, error) {
	c, err := kgo.NewClient(slices.Concat(cs.conn, opts, cs.o.ClientOpts(name))...)
	if err == nil {
		cs.all = append(cs.all, c)
	}
	return c, err
}

func (cs *clientSet) close() {
	for _, c := range cs.all {
		c.Close()
	}
}

// trusted returns what every reader of the log in this package builds:
// the follower of the trust topic (on trustClient, made with
// events.TrustConsumeOpts) that keeps a registry of the keys anchors
// vouch for, and the intake that decodes the other topics against that
// registry. Both refuse records to dlq, or only log them if it is nil.
// The follower reports bad trust events: the dead-letter topic has them
// once per reader start, not once per agent.
func (o options) trusted(anchors []events.Key, trustClient *kgo.Client, dlq *events.DeadLetter) (*events.TrustFollower, *events.Intake, error) {
	keys := events.NewFollowingRegistry(anchors...)
	decoder := func(keys events.KeySource) (*events.Decoder, error) {
		return events.NewDecoder(events.NewVerifier(keys), append([]events.Option{events.WithTopics(o.topics)}, o.DecoderOpts...)...)
	}
	dec, err := decoder(keys)
	if err != nil {
		return nil, nil, err
	}
	trustDec, err := decoder(keys.Anchors())
	if err != nil {
		return nil, nil, err
	}
	trustIn, err := events.NewIntake(trustDec, dlq, o.Events()...)
	if err != nil {
		return nil, nil, err
	}
	follower, err := events.NewTrustFollower(trustClient, o.topics[events.TopicTrust], trustIn, keys, o.Events()...)
	if err != nil {
		return nil, nil, err
	}
	in, err := events.NewIntake(dec, dlq, o.Events()...)
	if err != nil {
		return nil, nil, err
	}
	return follower, in, nil
}

// leave closes the runner's client, giving it the leave timeout to leave
// the group; see Runner.Close.
func (s *Service) leave(ctx context.Context, r *Runner) {
	if !r.Close(s.o.leave) {
		s.o.Log.WarnContext(ctx, "leaving the consumer group timed out; the group drops this member after its session timeout",
			"after", s.o.leave)
	}
}

// checkReader reports what a reader of the log into a store lacks: the
// connection, the store, the trust anchors, or a bound on its steps.
func checkReader(conn []kgo.Opt, store Store, anchors []events.Key, o options) []error {
	var errs []error
	if len(conn) == 0 {
		errs = append(errs, errors.New("kafka connection options are required"))
	}
	if store == nil {
		errs = append(errs, errors.New("a store is required"))
	}
	if len(anchors) == 0 {
		errs = append(errs, errors.New("a trust anchor (the hub's key) is required"))
	}
	if o.maxRecords <= 0 {
		errs = append(errs, errors.New("a step's records must be bounded by a positive number"))
	}
	return errs
}

// ping checks that Kafka answers and takes the credentials: franz-go
// retries refused ones quietly, so a ping says why at once.
func ping(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return nil
}
