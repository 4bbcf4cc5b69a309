package apicmd

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// The environment variables behind the flags, and the server when nothing
// names one.
const (
	EnvServer     = "ARGOSY_SERVER"
	EnvToken      = "ARGOSY_TOKEN"
	EnvContext    = "ARGOSY_CONTEXT"
	EnvCA         = "ARGOSY_CERTIFICATE_AUTHORITY"
	DefaultServer = "http://127.0.0.1:8080"
)

// DefaultRequestTimeout is --request-timeout's default: a call the hub
// has not answered in this long is taken as one it will not answer (a
// hub that is down behind an open port, a broker that took no
// connection), and the command says so instead of waiting for ever.
const DefaultRequestTimeout = 30 * time.Second

// Options are the flags of every command that calls a server.
type Options struct {
	// Server is --server; empty for the environment's, the context's or
	// the default.
	Server string
	// Context is --context; empty for the environment's or the current
	// context.
	Context string
	// Token is --token; empty for the environment's or the context's.
	Token string
	// CA is --certificate-authority; empty for the environment's or the
	// context's.
	CA string
	// HTTPClient is the client to call the server with; nil for a default
	// one.
	HTTPClient *http.Client
	// requestTimeout is --request-timeout: how long one call may wait for
	// the server's answer; zero for no limit (and for Options that no
	// command's flags bound).
	requestTimeout time.Duration

	// target is what Client resolved, for Explain.
	target *Target
}

// AddFlags binds --server, --context and --token. Their defaults are empty
// and the environment is read when the command runs, so that --help never
// prints a token.
func AddFlags(cmd *cobra.Command, o *Options) {
	f := cmd.Flags()
	f.StringVar(&o.Server, "server", "", "base URL of the hub or read API (default $"+EnvServer+
		", else the context's server, else "+DefaultServer+")")
	f.StringVar(&o.Context, "context", "", "context of the argosy config file to use (default $"+EnvContext+
		", else the current context)")
	f.StringVar(&o.Token, "token", "", "bearer token to send (default $"+EnvToken+", else the context's token)")
	f.StringVar(&o.CA, "certificate-authority", "", "PEM CA bundle trusted for an https server besides the system's CAs (default $"+EnvCA+
		", else the context's, from argosy login --certificate-authority)")
	f.DurationVar(&o.requestTimeout, "request-timeout", DefaultRequestTimeout,
		"how long to wait for the server's answer to each call before giving up (0: no limit)")
	if err := cmd.RegisterFlagCompletionFunc("context", CompleteContexts); err != nil {
		// cannot happen for a flag just added; surface it if it does
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("--context completion: %w", err) }
	}
}

// CompleteContexts completes the names of the config file's contexts.
func CompleteContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	path, err := config.Path()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return cfg.Names(), cobra.ShellCompDirectiveNoFileComp
}

// CompleteContextArg completes a context's name as a command's first
// argument, and nothing after it.
func CompleteContextArg(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return CompleteContexts(c, args, toComplete)
}

// Target is a resolved server and how to call it.
type Target struct {
	// Server is the server's base URL.
	Server string
	// ServerFrom says where Server came from: "--server", "ARGOSY_SERVER",
	// `context "NAME"` or "default".
	ServerFrom string
	// Token is the bearer token to send; empty for none.
	Token string
	// TokenFrom says where Token came from: "--token", "ARGOSY_TOKEN" or
	// `context "NAME"`; empty for none.
	TokenFrom string
	// CA is the CA bundle trusted besides the system's; empty for none.
	CA string
	// Context is the context that applies, nil for none.
	Context *config.Context
	// Skipped is the current context when it did not apply because the
	// server is another: its token was not sent.
	Skipped *config.Context
}

// Resolve works out the server and the token, reading the config file
// when the flags and the environment leave either open or --context names
// a context.
func (o *Options) Resolve() (*Target, error) {
	t := &Target{Server: o.Server, ServerFrom: "--server", Token: o.Token, TokenFrom: "--token"}
	if t.Server == "" {
		t.Server, t.ServerFrom = os.Getenv(EnvServer), EnvServer
	}
	if t.Token == "" {
		t.Token, t.TokenFrom = os.Getenv(EnvToken), EnvToken
	}
	if t.CA = o.CA; t.CA == "" {
		t.CA = os.Getenv(EnvCA)
	}
	name, from := o.Context, "--context"
	if name == "" {
		name, from = os.Getenv(EnvContext), EnvContext
	}
	if t.Server == "" || t.Token == "" || name != "" {
		x, err := loadContext(name, from)
		if err != nil {
			return nil, err
		}
		t.apply(x, name != "")
	}
	if t.Server == "" {
		t.Server, t.ServerFrom = DefaultServer, "default"
	}
	if t.Token == "" {
		t.TokenFrom = ""
	}
	return t, nil
}

// apply fills what the flags and the environment left open from the
// context x, if it applies: when named explicitly, or when its server is
// the one to call.
func (t *Target) apply(x *config.Context, explicit bool) {
	switch {
	case x == nil:
		return
	case !explicit && t.Server != "" && !SameServer(t.Server, x.Server):
		t.Skipped = x
		return
	}
	t.Context = x
	from := fmt.Sprintf("context %q", x.Name)
	if t.Server == "" && x.Server != "" {
		t.Server, t.ServerFrom = x.Server, from
	}
	if t.Token == "" && x.Token != "" {
		t.Token, t.TokenFrom = x.Token, from
	}
	if t.CA == "" {
		t.CA = x.CertificateAuthority
	}
}

// httpClient is o.HTTPClient, else one that trusts t's CA bundle besides
// the system's CAs, else a default one, with --request-timeout as its
// Timeout.
func (o *Options) httpClient(t *Target) (*http.Client, error) {
	hc := &http.Client{}
	switch {
	case o.HTTPClient != nil:
		*hc = *o.HTTPClient
	case t.CA != "":
		ca, err := cmdkit.CAClient(t.CA)
		if err != nil {
			return nil, fmt.Errorf("--certificate-authority: %w", err)
		}
		hc = ca
	}
	hc.Timeout = o.requestTimeout
	return hc, nil
}

// loadContext returns the context named name (given with the flag or
// variable from), else the current one, else nil. A config file that
// cannot be found is no context, unless a name is given.
func loadContext(name, from string) (*config.Context, error) {
	path, err := config.Path()
	if err != nil && name == "" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if name != "" {
		x := cfg.Find(name)
		if x == nil {
			return nil, &cmdkit.FlagError{Err: fmt.Errorf("%s %q: no such context in %s: %s", from, name, path, cfg.Known())}
		}
		return x, nil
	}
	x, err := cfg.Current()
	if err != nil {
		return nil, fmt.Errorf("%s: %w; run: argosy context use NAME", path, err)
	}
	return x, nil
}

// Client resolves the server and the token and returns a client of
// /api/v1 (package hub/api: the hub's own API and the read API) that
// sends the token. A bad URL given with --server or ARGOSY_SERVER is a
// cmdkit.FlagError.
func (o *Options) Client() (*api.Client, error) {
	t, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	hc, err := o.httpClient(t)
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(t.Server, t.Token, hc)
	if err != nil {
		if t.Context != nil && t.ServerFrom != "--server" && t.ServerFrom != EnvServer {
			return nil, fmt.Errorf("%s: %w; run: argosy login SERVER --name %s", t.ServerFrom, err, t.Context.Name)
		}
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("%s: %w", t.ServerFrom, err)}
	}
	o.target = t
	return c, nil
}

// Target returns what Client resolved, nil before it.
func (o *Options) Target() *Target { return o.target }

// Explain turns a 401 or 403 answer to a call of a client Client made
// into an error that says which server refused which token
// and what to do; other errors it returns as they are.
func (o *Options) Explain(err error) error {
	if o.target == nil {
		return err
	}
	return o.target.Explain(err)
}

// refusal returns the status and message of an error answer.
func refusal(err error) (status int, msg string, ok bool) {
	var re *api.ResponseError
	if errors.As(err, &re) {
		return re.Status, re.Body.Error, true
	}
	return 0, "", false
}

// Explain is Options.Explain for a call to t.
func (t *Target) Explain(err error) error {
	if cmdkit.Untrusted(err) {
		return &authError{msg: fmt.Sprintf("the certificate of %s is not trusted: if a private CA signed it, pass its PEM bundle with "+
			"--certificate-authority FILE, or keep it in the context: argosy login %s --certificate-authority FILE", t.Server, t.Server), err: err}
	}
	code, message, ok := refusal(err)
	if !ok || (code != http.StatusUnauthorized && code != http.StatusForbidden) {
		return err
	}
	status := fmt.Sprintf("(%d %s)", code, http.StatusText(code))
	login := "argosy login " + t.Server + " --token TOKEN"
	if t.Context != nil {
		login += " --name " + t.Context.Name
	}
	var msg string
	switch {
	case t.Token == "" && t.Skipped != nil:
		msg = fmt.Sprintf("the hub at %s wants a token and none was sent %s: %s; the current context %q is for %s, "+
			"so its token was not sent: pass --context %s if it is the same hub, or run: %s",
			t.Server, status, message, t.Skipped.Name, t.Skipped.Server, t.Skipped.Name, login)
	case t.Token == "":
		msg = fmt.Sprintf("the hub at %s wants a token and none was sent %s: %s; run: %s",
			t.Server, status, message, login)
	case code == http.StatusForbidden:
		msg = fmt.Sprintf("the hub at %s refused the request %s: %s; the token from %s is good but may not do this: "+
			"ask the hub's administrator for a role that may, or log in with another token: %s",
			t.Server, status, message, t.TokenFrom, login)
	default:
		msg = fmt.Sprintf("the hub at %s refused the token from %s %s: %s; run: %s",
			t.Server, t.TokenFrom, status, message, login)
	}
	return &authError{msg: msg, err: err}
}

// authError is a 401 or 403 with what to do about it; it unwraps to the
// api.ResponseError.
type authError struct {
	msg string
	err error
}

func (e *authError) Error() string { return e.msg }
func (e *authError) Unwrap() error { return e.err }

// SameServer reports whether the base URLs a and b name the same server:
// the same scheme, host and port, and path, but for case in the host and a
// trailing slash.
func SameServer(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// ParseTime parses the RFC 3339 value of --flag; empty is the zero time, and
// anything else that does not parse is a cmdkit.FlagError.
func ParseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, &cmdkit.FlagError{Err: fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-03-02T15:04:05Z", flag, v)}
	}
	return t, nil
}
