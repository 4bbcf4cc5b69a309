package apicmd_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// parse binds the flags to a command, parses args and returns the options.
func parse(t *testing.T, args ...string) *apicmd.Options {
	t.Helper()
	var opts apicmd.Options
	cmd := &cobra.Command{Use: "reader", RunE: func(*cobra.Command, []string) error { return nil }}
	apicmd.AddFlags(cmd, &opts)
	cmd.SetArgs(append([]string{}, args...)) // nil would be os.Args
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return &opts
}

// fleetConfig is a config of three contexts, prod current.
func fleetConfig() *config.Config {
	return &config.Config{CurrentContext: "prod", Contexts: []config.Context{
		{Name: "prod", Server: "https://hub.example.com", Token: "prod-token", Project: "payments"},
		{Name: "dev", Server: "http://127.0.0.1:9090", Token: "dev-token"},
		{Name: "anon", Server: "https://anon.example.com"},
	}}
}

// TestResolve checks the order in which the server and the token are
// found: flag, environment, the context --context names, the current
// context, the default; and that the current context's token goes to its
// own server only.
func TestResolve(t *testing.T) {
	const (
		prod  = "https://hub.example.com"
		other = "http://elsewhere:8080"
	)
	noCurrent := fleetConfig()
	noCurrent.CurrentContext = ""
	gone := fleetConfig()
	gone.CurrentContext = "gone"
	tests := []struct {
		name    string
		config  *config.Config // nil: no file
		bad     bool           // a config file that does not parse
		env     map[string]string
		args    []string
		want    apicmd.Target // Context and Skipped by name below
		context string
		skipped string
		wantErr string
		flagErr bool
	}{
		{name: "nothing", want: apicmd.Target{Server: apicmd.DefaultServer, ServerFrom: "default"}},
		{name: "no current context", config: noCurrent, want: apicmd.Target{Server: apicmd.DefaultServer, ServerFrom: "default"}},
		{name: "current context", config: fleetConfig(),
			want: apicmd.Target{Server: prod, ServerFrom: `context "prod"`, Token: "prod-token", TokenFrom: `context "prod"`}, context: "prod"},
		{name: "--server is the current context's", config: fleetConfig(), args: []string{"--server", "https://HUB.example.com/"},
			want: apicmd.Target{Server: "https://HUB.example.com/", ServerFrom: "--server", Token: "prod-token", TokenFrom: `context "prod"`}, context: "prod"},
		{name: "--server is another", config: fleetConfig(), args: []string{"--server", other},
			want: apicmd.Target{Server: other, ServerFrom: "--server"}, skipped: "prod"},
		{name: "ARGOSY_SERVER is another", config: fleetConfig(), env: map[string]string{apicmd.EnvServer: other},
			want: apicmd.Target{Server: other, ServerFrom: apicmd.EnvServer}, skipped: "prod"},
		{name: "--server over ARGOSY_SERVER", env: map[string]string{apicmd.EnvServer: "http://env:1"}, args: []string{"--server", other},
			want: apicmd.Target{Server: other, ServerFrom: "--server"}},
		{name: "--context", config: fleetConfig(), args: []string{"--context", "dev"},
			want: apicmd.Target{Server: "http://127.0.0.1:9090", ServerFrom: `context "dev"`, Token: "dev-token", TokenFrom: `context "dev"`}, context: "dev"},
		{name: "ARGOSY_CONTEXT", config: fleetConfig(), env: map[string]string{apicmd.EnvContext: "dev"},
			want: apicmd.Target{Server: "http://127.0.0.1:9090", ServerFrom: `context "dev"`, Token: "dev-token", TokenFrom: `context "dev"`}, context: "dev"},
		{name: "--context over ARGOSY_CONTEXT", config: fleetConfig(), env: map[string]string{apicmd.EnvContext: "dev"}, args: []string{"--context", "anon"},
			want: apicmd.Target{Server: "https://anon.example.com", ServerFrom: `context "anon"`}, context: "anon"},
		{name: "--context's token goes to --server", config: fleetConfig(), args: []string{"--context", "dev", "--server", other},
			want: apicmd.Target{Server: other, ServerFrom: "--server", Token: "dev-token", TokenFrom: `context "dev"`}, context: "dev"},
		{name: "ARGOSY_SERVER over --context", config: fleetConfig(), env: map[string]string{apicmd.EnvServer: other}, args: []string{"--context", "dev"},
			want: apicmd.Target{Server: other, ServerFrom: apicmd.EnvServer, Token: "dev-token", TokenFrom: `context "dev"`}, context: "dev"},
		{name: "--token", config: fleetConfig(), args: []string{"--token", "flag-token"},
			want: apicmd.Target{Server: prod, ServerFrom: `context "prod"`, Token: "flag-token", TokenFrom: "--token"}, context: "prod"},
		{name: "ARGOSY_TOKEN", config: fleetConfig(), env: map[string]string{apicmd.EnvToken: "env-token"},
			want: apicmd.Target{Server: prod, ServerFrom: `context "prod"`, Token: "env-token", TokenFrom: apicmd.EnvToken}, context: "prod"},
		{name: "--token over ARGOSY_TOKEN", env: map[string]string{apicmd.EnvToken: "env-token"}, args: []string{"--token", "flag-token"},
			want: apicmd.Target{Server: apicmd.DefaultServer, ServerFrom: "default", Token: "flag-token", TokenFrom: "--token"}},
		{name: "no such --context", config: fleetConfig(), args: []string{"--context", "nope"}, flagErr: true,
			wantErr: `--context "nope": no such context in CONFIG: known contexts are prod, dev, anon`},
		{name: "no such ARGOSY_CONTEXT", env: map[string]string{apicmd.EnvContext: "nope"}, flagErr: true,
			wantErr: `ARGOSY_CONTEXT "nope": no such context in CONFIG: there are none; run: argosy login SERVER`},
		{name: "current context gone", config: gone, wantErr: `CONFIG: the current context "gone" is not in the config: known contexts are prod, dev, anon; run: argosy context use NAME`},
		{name: "bad config", bad: true, wantErr: "argosy config file CONFIG: "},
		{name: "bad config unread", bad: true, args: []string{"--server", other, "--token", "t"},
			want: apicmd.Target{Server: other, ServerFrom: "--server", Token: "t", TokenFrom: "--token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := cmdtest.Isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			switch {
			case tc.bad:
				if err := os.WriteFile(path, []byte("contexts: {\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			case tc.config != nil:
				if err := tc.config.Save(path); err != nil {
					t.Fatal(err)
				}
			}
			got, err := parse(t, tc.args...).Resolve()
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "CONFIG", path)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				if errors.As(err, new(*cmdkit.FlagError)) != tc.flagErr {
					t.Errorf("FlagError: %T, want %v", err, tc.flagErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name(got.Context) != tc.context || name(got.Skipped) != tc.skipped {
				t.Errorf("context %q, skipped %q; want %q, %q", name(got.Context), name(got.Skipped), tc.context, tc.skipped)
			}
			got.Context, got.Skipped = nil, nil
			if *got != tc.want {
				t.Errorf("target\n%+v, want\n%+v", *got, tc.want)
			}
		})
	}
}

func name(x *config.Context) string {
	if x == nil {
		return ""
	}
	return x.Name
}

// TestClientSendsToken checks that the client Client makes sends the
// resolved token as a bearer token, and none when there is none.
func TestClientSendsToken(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write([]byte(`{"items":[]}`)); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	path := cmdtest.Isolate(t)
	cfg := &config.Config{CurrentContext: "local", Contexts: []config.Context{{Name: "local", Server: srv.URL, Token: "ctx-token"}}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--token", "flag-token"}, {"--server", srv.URL + "/", "--context", ""}} {
		c, err := parse(t, args...).Client()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Clusters(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Contexts[0].Token = ""
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	c, err := parse(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clusters(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"Bearer ctx-token", "Bearer flag-token", "Bearer ctx-token", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Authorization headers %q, want %q", got, want)
	}
}

// TestClientBadServer checks the error for a bad URL: a usage error when
// given with --server or ARGOSY_SERVER, and one that points at the
// context otherwise.
func TestClientBadServer(t *testing.T) {
	path := cmdtest.Isolate(t)
	cfg := &config.Config{CurrentContext: "typo", Contexts: []config.Context{{Name: "typo", Server: "hub:8080"}}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	_, err := parse(t).Client()
	if err == nil || errors.As(err, new(*cmdkit.FlagError)) ||
		!strings.HasPrefix(err.Error(), `context "typo": server URL "hub:8080"`) || !strings.HasSuffix(err.Error(), "run: argosy login SERVER --name typo") {
		t.Errorf("context's bad server: %v", err)
	}
	t.Setenv(apicmd.EnvServer, "hub:8080")
	_, err = parse(t).Client()
	if err == nil || !errors.As(err, new(*cmdkit.FlagError)) || !strings.HasPrefix(err.Error(), `ARGOSY_SERVER: server URL "hub:8080"`) {
		t.Errorf("ARGOSY_SERVER's bad server: %v", err)
	}
}

// TestExplain checks what a 401 or 403 turns into: which hub refused
// which token, and the command to run; and that other errors pass as
// they are.
func TestExplain(t *testing.T) {
	const wantToken = "good"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "":
			writeError(t, w, http.StatusUnauthorized, "missing bearer token")
		case "Bearer " + wantToken:
			writeError(t, w, http.StatusNotFound, `cluster \"x\" not found`)
		case "Bearer viewer":
			writeError(t, w, http.StatusForbidden, "role viewer may not read the audit")
		default:
			writeError(t, w, http.StatusUnauthorized, "token expired")
		}
	}))
	t.Cleanup(srv.Close)
	u := srv.URL
	tests := []struct {
		name    string
		current config.Context
		args    []string
		want    string
	}{
		{name: "context's token refused", current: config.Context{Server: u, Token: "old"},
			want: `the hub at ` + u + ` refused the token from context "cur" (401 Unauthorized): token expired; run: argosy login ` + u + ` --token TOKEN --name cur`},
		{name: "--token refused", current: config.Context{Server: u}, args: []string{"--token", "old"},
			want: `the hub at ` + u + ` refused the token from --token (401 Unauthorized): token expired; run: argosy login ` + u + ` --token TOKEN --name cur`},
		{name: "no token", current: config.Context{Server: "http://other:1", Token: "t"}, args: []string{"--server", u, "--context", ""},
			want: `the hub at ` + u + ` wants a token and none was sent (401 Unauthorized): missing bearer token; the current context "cur" is for http://other:1, ` +
				`so its token was not sent: pass --context cur if it is the same hub, or run: argosy login ` + u + ` --token TOKEN`},
		{name: "no context", current: config.Context{Server: u}, args: []string{"--server", u, "--context", ""},
			want: `the hub at ` + u + ` wants a token and none was sent (401 Unauthorized): missing bearer token; run: argosy login ` + u + ` --token TOKEN --name cur`},
		{name: "forbidden", current: config.Context{Server: u, Token: "viewer"},
			want: `the hub at ` + u + ` refused the request (403 Forbidden): role viewer may not read the audit; the token from context "cur" is good but may not do this: ` +
				`ask the hub's administrator for a role that may, or log in with another token: argosy login ` + u + ` --token TOKEN --name cur`},
		{name: "not found", current: config.Context{Server: u, Token: wantToken}, want: `server answered 404 Not Found: cluster "x" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := cmdtest.Isolate(t)
			tc.current.Name = "cur"
			cfg := &config.Config{CurrentContext: "cur", Contexts: []config.Context{tc.current}}
			if err := cfg.Save(path); err != nil {
				t.Fatal(err)
			}
			opts := parse(t, tc.args...)
			c, err := opts.Client()
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Cluster(t.Context(), "x")
			err = opts.Explain(err)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			if !errors.As(err, new(*api.ResponseError)) {
				t.Errorf("%T does not unwrap to the ResponseError", err)
			}
		})
	}
	if err := (&apicmd.Options{}).Explain(nil); err != nil {
		t.Errorf("Explain(nil) = %v", err)
	}
}

// TestHubRoutesExplain checks that the client Client makes sends the
// resolved token to the hub's own routes too, and that their 401 and 403
// answers are explained as the read API's are, while others pass as they
// are.
func TestHubRoutesExplain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer viewer":
			writeError(t, w, http.StatusForbidden, "denied: bob may not clusters.register: role viewer, and it needs admin")
		case "Bearer admin":
			writeError(t, w, http.StatusConflict, "cluster c1 already exists (generation 1)")
		default:
			writeError(t, w, http.StatusUnauthorized, "unauthenticated: the token is not one this hub accepts")
		}
	}))
	t.Cleanup(srv.Close)
	u := srv.URL
	tests := []struct {
		token string
		want  string
	}{
		{"viewer", `the hub at ` + u + ` refused the request (403 Forbidden): denied: bob may not clusters.register: role viewer, and it needs admin; ` +
			`the token from context "cur" is good but may not do this: ask the hub's administrator for a role that may, or log in with another token: argosy login ` + u + ` --token TOKEN --name cur`},
		{"old", `the hub at ` + u + ` refused the token from context "cur" (401 Unauthorized): unauthenticated: the token is not one this hub accepts; run: argosy login ` + u + ` --token TOKEN --name cur`},
		{"admin", `the hub answered 409: cluster c1 already exists (generation 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.token, func(t *testing.T) {
			path := cmdtest.Isolate(t)
			cfg := &config.Config{CurrentContext: "cur", Contexts: []config.Context{{Name: "cur", Server: u, Token: tc.token}}}
			if err := cfg.Save(path); err != nil {
				t.Fatal(err)
			}
			opts := parse(t)
			c, err := opts.Client()
			if err != nil {
				t.Fatal(err)
			}
			if opts.Target() == nil || opts.Target().Server != u {
				t.Errorf("Target %+v, want the hub at %s", opts.Target(), u)
			}
			_, err = c.Objects(t.Context(), "", "")
			err = opts.Explain(err)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			if !errors.As(err, new(*api.ResponseError)) {
				t.Errorf("%T does not unwrap to the ResponseError", err)
			}
		})
	}
	cmdtest.Isolate(t)
	t.Setenv(apicmd.EnvServer, "hub:8080")
	if _, err := parse(t).Client(); err == nil || !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("ARGOSY_SERVER's bad server: %v, want a usage error", err)
	}
}

// writeError answers as the API does: status, and the message in JSON.
func writeError(t *testing.T, w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write([]byte(`{"error":"` + msg + `"}`)); err != nil {
		t.Error(err)
	}
}

// TestParseTime checks the time flags' values: empty, RFC 3339 with any
// offset, and anything else, a usage error.
func TestParseTime(t *testing.T) {
	got, err := apicmd.ParseTime("from", "2026-03-01T01:00:00.5+01:00")
	if want := time.Date(2026, 3, 1, 0, 0, 0, 5e8, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("ParseTime: %v, %v; want %v", got, err, want)
	}
	if got, err := apicmd.ParseTime("from", ""); err != nil || !got.IsZero() {
		t.Errorf("ParseTime of nothing: %v, %v; want the zero time", got, err)
	}
	_, err = apicmd.ParseTime("to", "03/01/2026")
	if err == nil || !errors.As(err, new(*cmdkit.FlagError)) || !strings.HasPrefix(err.Error(), `--to "03/01/2026": want an RFC 3339 time`) {
		t.Errorf("ParseTime of a bad time: %v, want a FlagError", err)
	}
}

func TestSameServer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://hub.example.com", "https://HUB.example.com/", true},
		{"https://hub.example.com/argosy/", "https://hub.example.com/argosy", true},
		{"https://hub.example.com", "http://hub.example.com", false},
		{"https://hub.example.com", "https://hub.example.com:8443", false},
		{"https://hub.example.com/a", "https://hub.example.com/b", false},
		{"http://[::1", "http://[::1", false},
	} {
		if got := apicmd.SameServer(tc.a, tc.b); got != tc.want {
			t.Errorf("SameServer(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
