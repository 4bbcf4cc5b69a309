// Package httpserve serves an HTTP handler for as long as a context lives,
// then shuts the server down gracefully: the one way Argosy's commands and
// components serve their APIs and metrics, over plain HTTP or over TLS with
// a certificate read again from its files when they change (Certificate).
// It is a leaf over the standard library.
package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds the graceful shutdown: requests still running
// after it are cut.
const ShutdownTimeout = 10 * time.Second

// ReadTimeout bounds how long a request, its body included, may take to
// arrive: a client sending its body a byte at a time would otherwise hold
// a connection, a goroutine and the body read so far for as long as it
// liked, without any credential when the route reads the body to find one
// (a join, the login form). Bodies are at most a few MiB, which a minute
// carries at 35 KB/s.
const ReadTimeout = time.Minute

// readTimeout is ReadTimeout, shortened by the package's tests.
var readTimeout = ReadTimeout

// Run listens on addr and serves h until ctx ends, then shuts the server
// down gracefully and returns nil; it returns at once with the error if
// the address cannot be listened on or the server fails.
func Run(ctx context.Context, addr string, h http.Handler, opts ...Option) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return Serve(ctx, ln, h, opts...)
}

// Option configures Run and Serve.
type Option func(*http.Server)

// WithTLS serves HTTPS with cfg, which must present a certificate (by
// Certificates or GetCertificate; Certificate.TLSConfig does); plain HTTP
// to the address is then refused.
func WithTLS(cfg *tls.Config) Option { return func(s *http.Server) { s.TLSConfig = cfg } }

// WithUnencryptedHTTP2 serves HTTP/2 with prior knowledge (h2c) beside
// HTTP/1.1 on a plain HTTP address, as gRPC clients in clear text speak
// it; HTTPS negotiates HTTP/2 by ALPN without it.
func WithUnencryptedHTTP2() Option {
	return func(s *http.Server) {
		var ps http.Protocols
		ps.SetHTTP1(true)
		ps.SetHTTP2(true)
		ps.SetUnencryptedHTTP2(true)
		s.Protocols = &ps
	}
}

// stoppingKey is the context key of the channel Stopping returns.
type stoppingKey struct{}

// Stopping returns a channel closed when the server that serves the
// request of ctx begins to shut down; nil, never ready, for a context of
// no such server. Requests are not cancelled when it is, so that the
// ones under way finish; a request that lasts as long as its client
// wants (a stream of events) ends when it is instead, so that it does not
// hold the shutdown up.
func Stopping(ctx context.Context) <-chan struct{} {
	c, _ := ctx.Value(stoppingKey{}).(<-chan struct{})
	return c
}

// Serve is Run on a listener the caller made; it closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ...Option) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.WithoutCancel(ctx), stoppingKey{}, ctx.Done())
		}}
	for _, o := range opts {
		o(srv)
	}
	errc := make(chan error, 1)
	go func() { // received below on every path
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	return nil
}
