package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Authenticator finds the principal of a bearer token: a token of the
// tokens file, or an OIDC ID token. Run follows the tokens file (given
// Open) and reads the OIDC issuer's discovery document.
type Authenticator struct {
	// set is what the tokens file grants now (tokens.go).
	set     atomic.Pointer[tokenSet]
	oidc    *oidcAuth
	oidcCfg *OIDC // as the authenticator started with it
	// file follows the tokens file, given Open.
	file *tokenFile
	o    options
}

// Option configures an Authenticator.
type Option func(*options)

type options struct {
	log      *slog.Logger
	verified func(ctx context.Context, outcome string)
}

// WithLogger logs to l (default: nowhere): the tokens file's changes and
// the OIDC issuer's failures.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithVerified calls f with the outcome of each OIDC verification
// ("allowed", "no_role", "invalid", "expired", "unavailable"), for the
// owner's metrics.
func WithVerified(f func(ctx context.Context, outcome string)) Option {
	return func(o *options) { o.verified = f }
}

// New returns an authenticator of tokens, and of ID tokens of the OIDC
// issuer cfg when it is not nil.
func New(tokens []Token, cfg *OIDC, opts ...Option) (*Authenticator, error) {
	o := options{log: slog.New(slog.DiscardHandler), verified: func(context.Context, string) {}}
	for _, opt := range opts {
		opt(&o)
	}
	a := &Authenticator{oidcCfg: cfg, o: o}
	var errs []error
	if cfg != nil {
		var err error
		if a.oidc, err = newOIDCAuth(*cfg); err != nil {
			errs = append(errs, err)
		} else {
			a.oidc.log = o.log
		}
	}
	set, err := newTokenSet(TokenFile{Tokens: tokens, OIDC: cfg})
	a.set.Store(set)
	errs = append(errs, err)
	if len(set.byHash) == 0 && cfg == nil && errors.Join(errs...) == nil {
		errs = append(errs, errors.New("no tokens and no OIDC issuer: no one would be accepted"))
	}
	return a, errors.Join(errs...)
}

// Open returns an authenticator of the tokens file at path, which Run
// follows: it reads the file again every second, and a change to its
// tokens (one added, removed, or given another role or scope) or to its
// OIDC groups applies at once. The other settings of the oidc section
// take a restart.
func Open(path string, opts ...Option) (*Authenticator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	f, err := ParseTokenFile(path, b)
	if err != nil {
		return nil, err
	}
	a, err := New(f.Tokens, f.OIDC, opts...)
	if err != nil {
		return nil, err
	}
	a.file = &tokenFile{path: path, auth: a, log: a.o.log, last: sha256.Sum256(b)}
	return a, nil
}

// Run follows the tokens file, if the authenticator has one, and reads
// the OIDC issuer's discovery document, if it has one, until ctx ends;
// then it returns nil.
func (a *Authenticator) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	if a.oidc != nil {
		g.Go(func() error { return a.oidc.discover(gctx) })
	}
	if a.file != nil {
		g.Go(func() error { return a.file.run(gctx) })
	}
	return g.Wait()
}

// ErrUnauthenticated is a request without a credential the authenticator
// knows (401).
var ErrUnauthenticated = errors.New("unauthenticated")

// Status is the HTTP status that answers a refusal of the authenticator
// (Request, Token) or of a principal (Allow): 503 while an ID token
// cannot be checked yet (ErrIssuerUnavailable: trying again helps), 403
// for a call the caller may not make (ErrDenied), and 401 otherwise.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrIssuerUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrDenied):
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}

// Bearer returns the bearer token of r's Authorization header, if it
// has one.
func Bearer(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok, ok && tok != ""
}

// Request finds the principal of r's bearer token.
func (a *Authenticator) Request(r *http.Request) (*Principal, error) {
	tok, ok := Bearer(r)
	if !ok {
		return nil, fmt.Errorf("%w: no bearer token (send Authorization: Bearer <token>)", ErrUnauthenticated)
	}
	return a.Token(r.Context(), tok)
}

// Token finds the principal of a bearer token.
func (a *Authenticator) Token(ctx context.Context, tok string) (*Principal, error) {
	// Tokens are looked up by their hash: the lookup's timing depends on
	// the hash, which tells nothing about a token the caller does not have.
	set := a.set.Load()
	p, ok := set.byHash[sha256.Sum256([]byte(tok))]
	switch {
	case ok:
		return p, nil
	case a.oidc != nil && isJWT(tok):
		c, outcome, err := a.oidc.authenticate(ctx, tok)
		if err == nil {
			p, outcome = set.oidcPrincipal(c, a.oidc.cfg.GroupsClaim)
		}
		a.o.verified(ctx, outcome)
		return p, err
	}
	return nil, fmt.Errorf("%w: the token is not one this hub accepts", ErrUnauthenticated)
}

// Hashed returns the principal of the token whose SHA-256 is sum, as the
// tokens file has it now, or nil.
func (a *Authenticator) Hashed(sum [sha256.Size]byte) *Principal {
	return a.set.Load().byHash[sum]
}

// Caller returns the principal of an OIDC caller whose ID token has been
// verified before (a session's), as the tokens file's groups have it now.
func (a *Authenticator) Caller(c Caller) (*Principal, error) {
	if a.oidc == nil {
		return nil, fmt.Errorf("%w: the hub takes no OIDC callers now: log in again", ErrUnauthenticated)
	}
	p, _ := a.set.Load().oidcPrincipal(c, a.oidc.cfg.GroupsClaim)
	return p, nil
}
