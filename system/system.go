// Package system assembles one server process: the hub's API with the
// projector's read API and the web dashboard behind one HTTP server, an
// optional projector replica (the fold) into the same store, and an
// operations server with liveness, readiness and metrics. It is the one
// process assembly (controller-runtime's Manager, in this project's
// idiom): argosy-hub run, argosy-dev and the tests that need the whole
// server run it. It is production code: it links no test server, no
// embedded broker and no simulation.
package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// ErrRunAgain is Run's answer when it is called again: the parts run
// once.
var ErrRunAgain = errors.New("system: Run was called already")

// System is one server process's parts, assembled by New and run by Run.
type System struct {
	o      options
	hub    *hub.Server
	fold   *projector.Service // nil without WithFold
	ln     net.Listener
	checks []Check
	ops    http.Handler // the operations server's, made by New; nil without WithOpsServer
	ran    atomic.Bool  // set by the first Run
}

// New assembles the parts: the hub on Kafka (conn), signing with signer,
// whose key must be among anchors (the hub keys readers trust), and each
// part the options ask for. With WithListen it binds the API's address,
// which Run serves and closes; a listener given with WithListener is the
// System's from New on. Either is closed again when New fails.
func New(conn []kgo.Opt, signer *events.Signer, anchors []events.Key, opts ...Option) (_ *System, err error) {
	o := newOptions(opts)
	if o.listener != nil {
		defer func() {
			if err != nil {
				err = errors.Join(err, o.listener.Close())
			}
		}()
	}
	var errs []error
	if o.store == nil && (o.dashboard || o.fold) {
		errs = append(errs, errors.New("the dashboard and the fold need a store"))
	}
	if (o.listen == "") == (o.listener == nil) {
		errs = append(errs, errors.New("give either an address or a listener to serve the API on"))
	}
	if (o.opsAddr == "") != (o.ops == nil) {
		errs = append(errs, errors.New("the operations server needs both an address and a handler"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	s := &System{o: o}
	if o.fold {
		if err := s.newFold(conn, anchors); err != nil {
			return nil, err
		}
	}
	ln := o.listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", o.listen); err != nil {
			return nil, fmt.Errorf("system: listen: %w", err)
		}
	}
	hopts, err := s.hubOptions(ln)
	if err == nil {
		s.hub, err = hub.New(conn, signer, anchors, o.tokens, hopts...)
	}
	if err != nil && o.listener == nil {
		err = errors.Join(err, ln.Close())
	}
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.checks = append([]Check{s.hub.Ready}, o.checks...)
	if o.store != nil {
		s.checks = append(s.checks, o.store.Ping)
	}
	if s.fold != nil {
		s.checks = append(s.checks, s.fold.Ready)
	}
	if o.ops != nil {
		s.ops = o.ops(s.Ready)
	}
	return s, nil
}

// hubOptions are the hub's options: the System's, then WithHubOptions'.
func (s *System) hubOptions(ln net.Listener) ([]hub.Option, error) {
	o := s.o
	opts := []hub.Option{hub.WithTopics(events.DefaultTopics(o.prefix)), hub.WithTransactionalPrefix(events.HubTransactionalPrefix(o.prefix)),
		hub.WithListener(ln), hub.WithLogger(o.Log.With("component", "hub")), hub.WithTracerProvider(o.Tracers), hub.WithMeterProvider(o.Meters),
		hub.WithClientOpts(o.ClientOpts), hub.WithDecoderOptions(o.DecoderOpts...)}
	if o.tokenFile != "" {
		opts = append(opts, hub.WithTokenFile(o.tokenFile))
	}
	if o.tls != nil {
		opts = append(opts, hub.WithTLS(o.tls))
	}
	if o.store != nil {
		ropts := append([]read.Option{read.WithLogger(o.Log.With("component", "read")), read.WithTracerProvider(o.Tracers)}, o.read...)
		opts = append(opts, hub.WithReadAPI(read.New(o.store, ropts...)))
	}
	if o.dashboard {
		dash, err := web.New(o.store, append([]web.Option{web.WithLogger(o.Log.With("component", "dashboard"))}, o.web...)...)
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		opts = append(opts, hub.WithDashboard(dash))
	}
	return append(opts, o.hub...), nil
}

// newFold makes the projector replica that folds into the store.
func (s *System) newFold(conn []kgo.Opt, anchors []events.Key) error {
	o := s.o
	if o.foldConn != nil {
		conn = o.foldConn
	}
	group := o.foldGroup
	if group == "" {
		group = events.ProjectorGroup(o.prefix)
	}
	popts := []projector.Option{projector.WithTopics(events.DefaultTopics(o.prefix)), projector.WithGroup(group),
		projector.WithLogger(o.Log.With("component", "projector")), projector.WithTracerProvider(o.Tracers),
		projector.WithMeterProvider(o.Meters), projector.WithDecoderOptions(o.DecoderOpts...), projector.WithClientOpts(o.ClientOpts)}
	var err error
	s.fold, err = projector.NewService(conn, o.store, anchors, popts...)
	return err
}

// Addr is the API's address.
func (s *System) Addr() net.Addr { return s.ln.Addr() }

// URL is the API's base URL: https with WithTLS, else http.
func (s *System) URL() string {
	if s.o.tls != nil {
		return "https://" + s.Addr().String()
	}
	return "http://" + s.Addr().String()
}

// Ready reports whether every part can do its work now: the hub has read
// the log and reaches Kafka, the store answers, the fold reaches Kafka,
// and every WithReadyCheck passes. The operations server's /readyz
// serves it.
func (s *System) Ready(ctx context.Context) error {
	errs := make([]error, 0, len(s.checks))
	for _, c := range s.checks {
		errs = append(errs, c(ctx))
	}
	return errors.Join(errs...)
}

// WaitReady waits until Ready passes while Run runs, checking every
// 50 ms, or returns ctx's error.
func (s *System) WaitReady(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if err := s.Ready(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Run runs every part until ctx ends, then stops them all, the API's
// server gracefully, and returns nil; or it returns the first error a
// part could not recover from, once every part has stopped. Either way
// the API's listener is closed, even if the hub stopped before serving.
// Run is called once: a second call runs nothing and returns ErrRunAgain.
func (s *System) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunAgain
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.hub.Run(gctx) })
	if s.fold != nil {
		g.Go(func() error { return s.fold.Run(gctx) })
	}
	if s.ops != nil {
		g.Go(func() error { return httpserve.Run(gctx, s.o.opsAddr, s.ops) })
	}
	err := g.Wait()
	if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = errors.Join(err, fmt.Errorf("system: %w", cerr))
	}
	return err
}
