// Package auth is `argosy login` and `argosy logout`: login checks a
// bearer token against a hub's /api/v1/whoami and keeps it in a context of
// the argosy config file, which it makes current; logout removes a
// context's token.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// LoginOptions are the flags and argument of `argosy login`.
type LoginOptions struct {
	IO cmdkit.IOStreams
	// Server is the hub's base URL, without a trailing slash.
	Server string
	// Token is --token.
	Token string
	// TokenStdin is --token-stdin: read the token from standard input.
	TokenStdin bool
	// Name is --name, the context's name; empty for the server's host and
	// port.
	Name string
	// Project is --project; empty keeps the context's.
	Project string
	// CA is --certificate-authority, made absolute; empty keeps the
	// context's.
	CA string
	// Prompt reads a token from the terminal without echoing it; nil when
	// standard input is not a terminal.
	Prompt func(prompt string) (string, error)
	// HTTPClient calls the hub; nil for a default one.
	HTTPClient *http.Client
}

// NewCmdLogin returns `argosy login`. runF replaces the behaviour in tests.
func NewCmdLogin(io cmdkit.IOStreams, runF func(context.Context, *LoginOptions) error) *cobra.Command {
	opts := &LoginOptions{IO: io, Prompt: terminalPrompt(io)}
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Log in to a hub: check a token and keep it in a context",
		Long: `Check a bearer token against the hub at SERVER (GET /api/v1/whoami) and,
if the hub takes it, keep the server and the token in a context of the
argosy config file and make it current. The commands that call a server
use the current context from then on.

The token comes from --token, from standard input with --token-stdin, or,
when standard input is a terminal, from a prompt that does not echo it.
--token shows the token to ps and may keep it in the shell's history;
prefer the others.

A hub whose certificate a private CA signed is trusted with
--certificate-authority, a PEM CA bundle trusted besides the system's CAs,
whose path the context keeps as kubectl's kubeconfig does.

The context is named after SERVER's host and port unless --name names it.
Logging in again under the same name replaces its server and token, and
keeps its project and CA bundle unless --project or
--certificate-authority gives another. The config file is
$ARGOSY_CONFIG, else argosy/config.yaml in the user's configuration
directory; it is written readable by its owner only.`,
		Example: `  argosy login https://hub.example.com
  argosy login https://hub.example.com --token-stdin < token.txt
  pass show argosy/prod | argosy login https://hub.example.com --token-stdin --name prod --project payments
  argosy login http://127.0.0.1:8080 --token "$TOKEN" --name local
  argosy login https://argosy.internal:8443 --certificate-authority ./ca.crt`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.parse(args[0], c.Flags().Changed("token")); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return loginRun(c.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Token, "token", "", "the bearer token (seen by ps and kept in shell history: prefer --token-stdin or the prompt)")
	f.BoolVar(&opts.TokenStdin, "token-stdin", false, "read the token from standard input")
	f.StringVar(&opts.Name, "name", "", "the context's name (default SERVER's host:port)")
	f.StringVar(&opts.Project, "project", "", "the Argo CD project commands default to in this context")
	f.StringVar(&opts.CA, "certificate-authority", "", "PEM CA bundle trusted for SERVER besides the system's CAs, kept in the context")
	if err := cmd.RegisterFlagCompletionFunc("name", apicmd.CompleteContexts); err != nil {
		// cannot happen for a flag just added; surface it if it does
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("--name completion: %w", err) }
	}
	return cmd
}

// parse checks SERVER and the token flags.
func (o *LoginOptions) parse(server string, tokenSet bool) error {
	if _, err := api.NewClient(server, "", nil); err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("SERVER: %w", err)}
	}
	o.Server = strings.TrimSuffix(server, "/")
	o.Token = strings.TrimSpace(o.Token)
	switch {
	case tokenSet && o.TokenStdin:
		return &cmdkit.FlagError{Err: errors.New("give --token or --token-stdin, not both")}
	case tokenSet && o.Token == "":
		return &cmdkit.FlagError{Err: errors.New("--token is empty")}
	case !tokenSet && !o.TokenStdin && o.Prompt == nil:
		return &cmdkit.FlagError{Err: errors.New("no token: standard input is not a terminal to ask for one; " +
			"pass --token-stdin and the token on standard input, or --token TOKEN")}
	}
	if o.CA != "" {
		abs, err := filepath.Abs(o.CA)
		if err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--certificate-authority: %w", err)}
		}
		o.CA = abs
	}
	if o.Name == "" {
		u, err := url.Parse(o.Server)
		if err != nil { // api.NewClient parsed it already
			return &cmdkit.FlagError{Err: fmt.Errorf("SERVER: %w", err)}
		}
		o.Name = u.Host
	}
	return nil
}

// terminalPrompt returns a prompt for a token on io's terminal, or nil
// when standard input is not one.
func terminalPrompt(io cmdkit.IOStreams) func(string) (string, error) {
	f, ok := io.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(prompt string) (string, error) {
		fmt.Fprint(io.Err, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(io.Err)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		return string(b), nil
	}
}

// cleartext reports whether server is plain http to another host than
// this one.
func cleartext(server string) bool {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return h != "localhost" && (ip == nil || !ip.IsLoopback())
}

// maxToken bounds what --token-stdin reads.
const maxToken = 64 << 10

func loginRun(ctx context.Context, opts *LoginOptions) error {
	token, err := opts.token()
	if err != nil {
		return err
	}
	path, err := config.Path()
	if err != nil {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	x := config.Context{Name: opts.Name, Server: opts.Server, Token: token, Project: opts.Project, CertificateAuthority: opts.CA}
	if old := cfg.Find(opts.Name); old != nil {
		if x.Project == "" {
			x.Project = old.Project
		}
		if x.CertificateAuthority == "" {
			x.CertificateAuthority = old.CertificateAuthority
		}
	}
	hc := opts.HTTPClient
	if hc == nil {
		if hc, err = cmdkit.CAClient(x.CertificateAuthority); err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--certificate-authority: %w", err)}
		}
	}
	id, err := whoami(ctx, hc, opts.Server, token)
	if cmdkit.Untrusted(err) {
		return fmt.Errorf("%w; if a private CA signed the hub's certificate, pass its PEM bundle with --certificate-authority FILE", err)
	}
	if err != nil {
		return err
	}
	cfg.Set(x)
	cfg.CurrentContext = x.Name
	if err := cfg.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Logged in to %s as %s (%s); context %s\n", opts.Server, id.Actor, id.Role, x.Name)
	if cleartext(opts.Server) {
		fmt.Fprintf(opts.IO.Err, "Note: %s is plain http: the token crosses the network unencrypted.\n", opts.Server)
	}
	for _, env := range []string{apicmd.EnvServer, apicmd.EnvToken, apicmd.EnvContext} {
		if os.Getenv(env) != "" {
			fmt.Fprintf(opts.IO.Err, "Note: %s is set, and commands use it before this context.\n", env)
		}
	}
	return nil
}

// token returns the token from --token, standard input or the prompt.
func (o *LoginOptions) token() (string, error) {
	var token string
	switch {
	case o.Token != "":
		return o.Token, nil
	case o.TokenStdin:
		b, err := io.ReadAll(io.LimitReader(o.IO.In, maxToken))
		if err != nil {
			return "", fmt.Errorf("reading the token from standard input: %w", err)
		}
		token = string(b)
	default:
		t, err := o.Prompt("Token for " + o.Server + ": ")
		if err != nil {
			return "", err
		}
		token = t
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", errors.New("no token: the token read was empty")
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return "", errors.New("the token read holds white space: give one token, on one line")
	}
	return token, nil
}

// Identity is the hub's answer to GET /api/v1/whoami: who the token is
// and what it may do.
type Identity struct {
	Actor    string   `json:"actor"`
	Role     string   `json:"role"`
	Projects []string `json:"projects,omitempty"`
	Clusters string   `json:"clusters,omitempty"`
}

// whoami asks the hub at server who token is.
func whoami(ctx context.Context, hc *http.Client, server, token string) (*Identity, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/api/v1/whoami", http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("login request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	defer resp.Body.Close()
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	isJSON := err == nil && mt == "application/json"
	notHub := fmt.Sprintf("is %s an Argosy hub? A projector's read API takes no login: give it with --server or %s instead",
		server, apicmd.EnvServer)
	switch {
	case resp.StatusCode == http.StatusOK && isJSON:
		return decodeIdentity(resp.Body, server, notHub)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("the hub at %s refused the token (%d %s): %s; check that it is whole and has not expired, "+
			"or ask the hub's administrator for a new one", server, resp.StatusCode, http.StatusText(resp.StatusCode), message(resp.Body))
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed || !isJSON:
		return nil, fmt.Errorf("%s answered GET /api/v1/whoami with %d %s (%s): %s", server, resp.StatusCode,
			http.StatusText(resp.StatusCode), cmdkit.OrDash(resp.Header.Get("Content-Type")), notHub)
	}
	return nil, fmt.Errorf("the hub at %s answered %d %s: %s", server, resp.StatusCode, http.StatusText(resp.StatusCode), message(resp.Body))
}

func decodeIdentity(body io.Reader, server, notHub string) (*Identity, error) {
	var id Identity
	if err := json.NewDecoder(io.LimitReader(body, maxToken)).Decode(&id); err != nil {
		return nil, fmt.Errorf("login: decoding the answer of %s: %w", server, err)
	}
	if id.Actor == "" {
		return nil, fmt.Errorf("%s answered GET /api/v1/whoami with no actor: %s", server, notHub)
	}
	return &id, nil
}

// message is the error message of an error answer: the API's JSON error,
// else the body's text.
func message(body io.Reader) string {
	b, err := io.ReadAll(io.LimitReader(body, maxToken))
	if err != nil {
		return "(reading the answer: " + err.Error() + ")"
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return "(no message)"
}
