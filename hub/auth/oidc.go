package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCCallback is the path of the hub's OIDC login callback, which an
// oidc.redirectURL must name.
const OIDCCallback = "/login/oidc/callback"

// OIDC makes the hub (and the projector's read API) accept ID tokens
// from an OpenID Connect issuer as bearer tokens, beside the tokens of the
// tokens file. It is the tokens file's oidc section.
type OIDC struct {
	// Issuer is the issuer's URL, as its tokens' iss claim says; the hub
	// finds its keys through Issuer/.well-known/openid-configuration.
	Issuer string `json:"issuer"`
	// ClientID is the audience an ID token must name (its aud claim).
	ClientID string `json:"clientID"`
	// UsernameClaim names the caller in the audit, as oidc:<value>
	// (default "email"). A token without it, or whose email_verified is
	// false when it is "email", is named by its subject: oidc:sub:<sub>.
	UsernameClaim string `json:"usernameClaim,omitempty"`
	// GroupsClaim holds the caller's groups (default "groups").
	GroupsClaim string `json:"groupsClaim,omitempty"`
	// Groups grant roles: the first entry whose group the token names
	// decides the caller's role and scopes, so list the widest first. A
	// token none of whose groups is listed is refused (403).
	Groups []OIDCGroup `json:"groups"`
	// BrowserLogin offers "Log in with OIDC" on the dashboard's login
	// page: the authorization code flow with PKCE, whose ID token starts
	// a dashboard session (which keeps the caller, not the ID token).
	BrowserLogin bool `json:"browserLogin,omitempty"`
	// ClientSecret is the client's secret at the issuer, for a
	// confidential client; empty for a public one (PKCE alone).
	ClientSecret string `json:"clientSecret,omitempty"`
	// RedirectURL is the callback registered at the issuer,
	// https://HUB/login/oidc/callback; empty: the hub's URL as the browser
	// reached it, with that path.
	RedirectURL string `json:"redirectURL,omitempty"`
	// Scopes are asked for at login (default openid, email, profile);
	// add the one that makes the issuer send the groups claim, if any.
	Scopes []string `json:"scopes,omitempty"`
}

// OIDCGroup is the role and scopes an OIDC group grants, as a Token's.
type OIDCGroup struct {
	Group    string   `json:"group"`
	Role     string   `json:"role"`
	Projects []string `json:"projects,omitempty"`
	Clusters string   `json:"clusters,omitempty"`
}

// oidcAuth verifies ID tokens. Its verifier is made once the issuer's
// discovery document has been read (discover, which Run runs).
type oidcAuth struct {
	cfg OIDC
	log *slog.Logger
	// timeout bounds each request to the issuer (oidcTimeout).
	timeout time.Duration

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	endpoint oauth2.Endpoint
	lastErr  error
}

func newOIDCAuth(cfg OIDC) (*oidcAuth, error) {
	var errs []error
	if u, err := url.Parse(cfg.Issuer); cfg.Issuer == "" || err != nil || u.Host == "" {
		errs = append(errs, fmt.Errorf("oidc.issuer %q: want the issuer's URL, https://…", cfg.Issuer))
	} else if u.Scheme != "https" && (u.Scheme != "http" || !loopback(u.Hostname())) {
		errs = append(errs, fmt.Errorf("oidc.issuer %q: want https (plain http only on this machine's loopback)", cfg.Issuer))
	}
	if cfg.ClientID == "" {
		errs = append(errs, errors.New("oidc.clientID is required: the audience ID tokens name"))
	}
	if cfg.RedirectURL != "" {
		if u, err := url.Parse(cfg.RedirectURL); err != nil || u.Host == "" || u.Path != OIDCCallback ||
			(u.Scheme != "https" && (u.Scheme != "http" || !loopback(u.Hostname()))) {
			errs = append(errs, fmt.Errorf("oidc.redirectURL %q: want https://HUB%s (plain http only on this machine's loopback)", cfg.RedirectURL, OIDCCallback))
		}
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if cfg.UsernameClaim == "" {
		cfg.UsernameClaim = "email"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The groups, which may change while the hub runs, are the token
	// set's (tokens.go).
	return &oidcAuth{cfg: cfg, log: slog.New(slog.DiscardHandler), timeout: oidcTimeout}, nil
}

// oidcTimeout bounds each request to the issuer: discovery, and the key
// fetches go-oidc makes when the issuer's keys rotate.
const oidcTimeout = 10 * time.Second

// discover reads the issuer's discovery document until it succeeds or ctx
// ends, retrying with backoff and logging each failure; until then ID
// tokens are refused (503) with the reason. The provider's HTTP client has
// a timeout, which go-oidc's key fetches use too: a stalled key endpoint
// cannot hold every later verification.
func (a *oidcAuth) discover(ctx context.Context) error {
	wait := time.Second
	client := &http.Client{Timeout: a.timeout}
	for {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), a.cfg.Issuer)
		a.mu.Lock()
		if err == nil {
			a.verifier, a.endpoint, a.lastErr = p.Verifier(&oidc.Config{ClientID: a.cfg.ClientID}), p.Endpoint(), nil
		} else {
			a.lastErr = err
		}
		a.mu.Unlock()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		a.log.WarnContext(ctx, "the OIDC issuer's discovery document could not be read; ID tokens are refused until it is", "issuer", a.cfg.Issuer, "retry", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// ErrIssuerUnavailable is an ID token that cannot be checked yet: the
// issuer's discovery document has not been read. It is answered 503.
var ErrIssuerUnavailable = errors.New("unavailable")

// loopback reports whether host is a loopback name or address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isJWT tells a bearer that may be an ID token: three dot-separated parts.
func isJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

// authenticate verifies an ID token and returns its caller, with the
// metrics' outcome of a failure; the token set maps the caller's groups
// to its role (tokenSet.oidcPrincipal).
func (a *oidcAuth) authenticate(ctx context.Context, tok string) (Caller, string, error) {
	a.mu.Lock()
	v, lastErr := a.verifier, a.lastErr
	a.mu.Unlock()
	if v == nil {
		if lastErr == nil {
			lastErr = errors.New("its discovery document is being read")
		}
		return Caller{}, "unavailable", fmt.Errorf("%w: the OIDC issuer %s is not reachable yet (%w); try again", ErrIssuerUnavailable, a.cfg.Issuer, lastErr)
	}
	idt, err := v.Verify(ctx, tok)
	if err != nil {
		outcome := "invalid"
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			outcome = "expired"
		}
		return Caller{}, outcome, fmt.Errorf("%w: the %w does not verify: %w", ErrUnauthenticated, ErrBadIDToken, err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Caller{}, "invalid", fmt.Errorf("%w: the ID token's claims: %w", ErrUnauthenticated, err)
	}
	claim := a.cfg.UsernameClaim
	name, _ := claims[claim].(string)
	if verified, ok := claims["email_verified"].(bool); claim == "email" && ok && !verified {
		name = "" // an address the issuer has not verified names no one
	}
	if name == "" {
		claim, name = "sub", "sub:"+idt.Subject
	}
	if !Printable(name) {
		return Caller{}, "invalid", fmt.Errorf("%w: the ID token's %s claim %q holds a control or unprintable character, and the hub takes no such name for the audit's actor",
			ErrUnauthenticated, claim, strings.TrimPrefix(name, "sub:"))
	}
	return Caller{Actor: "oidc:" + name, Groups: stringsClaim(claims[a.cfg.GroupsClaim]), Expires: idt.Expiry}, "", nil
}

// stringsClaim reads a claim that is a list of strings, or one string.
func stringsClaim(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ErrBadIDToken marks an ID token that does not verify: the caller
// should get a new one from its identity provider.
var ErrBadIDToken = errors.New("ID token")
