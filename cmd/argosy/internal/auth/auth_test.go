package auth

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

func TestLoginFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    LoginOptions
		wantErr string
	}{
		{args: []string{"https://hub.example.com/", "--token", " t0k3n\n"},
			want: LoginOptions{Server: "https://hub.example.com", Token: "t0k3n", Name: "hub.example.com"}},
		{args: []string{"http://127.0.0.1:8080", "--token-stdin", "--name", "local", "--project", "payments"},
			want: LoginOptions{Server: "http://127.0.0.1:8080", TokenStdin: true, Name: "local", Project: "payments"}},
		{args: []string{"https://hub.example.com:8443/argosy", "--token", "t"},
			want: LoginOptions{Server: "https://hub.example.com:8443/argosy", Token: "t", Name: "hub.example.com:8443"}},
		{args: []string{"hub:8080", "--token", "t"}, wantErr: `SERVER: server URL "hub:8080": want http://HOST:PORT or https://HOST:PORT`},
		{args: []string{"https://hub", "--token", "t", "--token-stdin"}, wantErr: "give --token or --token-stdin, not both"},
		{args: []string{"https://hub", "--token", ""}, wantErr: "--token is empty"},
		{args: []string{"https://hub"}, wantErr: "no token: standard input is not a terminal to ask for one; pass --token-stdin"},
		{args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdLogin, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, new(*cmdkit.FlagError)) {
					t.Fatalf("error %v, want the FlagError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(LoginOptions{}, "IO", "Prompt")); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLogoutFlags(t *testing.T) {
	if got, err := cmdtest.Parse(t, NewCmdLogout, nil); err != nil || got.Name != "" {
		t.Errorf("logout: %+v, %v", got, err)
	}
	if got, err := cmdtest.Parse(t, NewCmdLogout, []string{"prod"}); err != nil || got.Name != "prod" {
		t.Errorf("logout prod: %+v, %v", got, err)
	}
	if _, err := cmdtest.Parse(t, NewCmdLogout, []string{"a", "b"}); !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("logout a b: %v, want a usage error", err)
	}
}

const goodToken = "g00d-t0k3n"

// newHub serves GET /api/v1/whoami as the hub does: alice for goodToken,
// 401 for any other. It returns its URL.
func newHub(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := `{"actor":"alice","role":"deployer","projects":["p1"],"clusters":"env=dev"}`
		switch {
		case r.Method != http.MethodGet || r.URL.Path != "/api/v1/whoami":
			w.WriteHeader(http.StatusNotFound)
			body = `{"error":"no such route"}`
		case r.Header.Get("Authorization") != "Bearer "+goodToken:
			w.WriteHeader(http.StatusUnauthorized)
			body = `{"error":"invalid bearer token"}`
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// login runs `argosy login` with stdin and args.
func login(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCmdLogin(cmdkit.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, nil)
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// TestLogin logs in to a hub with each way of giving the token and checks
// what it prints and the context it leaves current in a file only its
// owner reads.
func TestLogin(t *testing.T) {
	hub := newHub(t)
	u, err := url.Parse(hub)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		ctx   config.Context
	}{
		{name: "--token", args: []string{hub, "--token", goodToken},
			ctx: config.Context{Name: u.Host, Server: hub, Token: goodToken}},
		{name: "--token-stdin", stdin: goodToken + "\n", args: []string{hub + "/", "--token-stdin", "--name", "dev", "--project", "p1"},
			ctx: config.Context{Name: "dev", Server: hub, Token: goodToken, Project: "p1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := cmdtest.Isolate(t)
			out, errOut, err := login(t, tc.stdin, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if want := "Logged in to " + hub + " as alice (deployer); context " + tc.ctx.Name + "\n"; out != want || errOut != "" {
				t.Errorf("stdout %q, stderr %q; want %q", out, errOut, want)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want := &config.Config{CurrentContext: tc.ctx.Name, Contexts: []config.Context{tc.ctx}}
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("config file mode %v, %v; want 0600", fi.Mode(), err)
			}
		})
	}
}

// TestLoginPrompt checks the token read from the terminal's prompt.
func TestLoginPrompt(t *testing.T) {
	hub := newHub(t)
	path := cmdtest.Isolate(t)
	var out bytes.Buffer
	opts := &LoginOptions{IO: cmdkit.IOStreams{Out: &out, Err: &bytes.Buffer{}}, Server: hub, Name: "hub",
		Prompt: func(p string) (string, error) {
			if p != "Token for "+hub+": " {
				t.Errorf("prompt %q", p)
			}
			return goodToken, nil
		}}
	if err := loginRun(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	if cfg, err := config.Load(path); err != nil || cfg.CurrentContext != "hub" || cfg.Find("hub").Token != goodToken {
		t.Errorf("config %+v, %v", cfg, err)
	}
}

// TestLoginUpdates logs in again to a context that is there: its server
// and token are replaced, its project kept unless --project gives one, and
// the other contexts stay as they were.
func TestLoginUpdates(t *testing.T) {
	hub := newHub(t)
	path := cmdtest.Isolate(t)
	other := config.Context{Name: "other", Server: "https://other", Token: "other-token"}
	cfg := &config.Config{CurrentContext: "other", Contexts: []config.Context{
		{Name: "prod", Server: "https://old", Token: "old", Project: "payments"}, other}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		want config.Context
	}{
		{[]string{hub, "--token", goodToken, "--name", "prod"}, config.Context{Name: "prod", Server: hub, Token: goodToken, Project: "payments"}},
		{[]string{hub, "--token", goodToken, "--name", "prod", "--project", "web"}, config.Context{Name: "prod", Server: hub, Token: goodToken, Project: "web"}},
	}
	for _, s := range steps {
		if _, _, err := login(t, "", s.args...); err != nil {
			t.Fatal(err)
		}
		got, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		want := &config.Config{CurrentContext: "prod", Contexts: []config.Context{s.want, other}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: config (-want +got):\n%s", strings.Join(s.args, " "), diff)
		}
	}
}

// TestLoginErrors checks what login says when the hub refuses the token,
// when the server is not a hub, and when the token read is not one; and
// that it leaves the config file alone then.
func TestLoginErrors(t *testing.T) {
	hub := newHub(t)
	readAPI := cmdtest.ReadServer(t, readtest.Fleet())
	down := httptest.NewServer(nil)
	down.Close()
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{name: "refused", args: []string{hub, "--token", "expired"},
			want: "the hub at " + hub + " refused the token (401 Unauthorized): invalid bearer token; check that it is whole and has not expired, " +
				"or ask the hub's administrator for a new one"},
		{name: "read API", args: []string{readAPI, "--token", goodToken},
			want: readAPI + " answered GET /api/v1/whoami with 404 Not Found (application/json): is " + readAPI +
				" an Argosy hub? A projector's read API takes no login: give it with --server or ARGOSY_SERVER instead"},
		{name: "down", args: []string{down.URL, "--token", goodToken}, want: "login: Get \"" + down.URL + "/api/v1/whoami\": "},
		{name: "empty stdin", stdin: "\n\n", args: []string{hub, "--token-stdin"}, want: "no token: the token read was empty"},
		{name: "two tokens", stdin: "a\nb\n", args: []string{hub, "--token-stdin"}, want: "the token read holds white space"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := cmdtest.Isolate(t)
			_, _, err := login(t, tc.stdin, tc.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a failed login wrote the config file: %v", err)
			}
		})
	}
}

// TestLoginNotes checks the notes on standard error: the environment
// overrides the new context, and plain http to another host.
func TestLoginNotes(t *testing.T) {
	hub := newHub(t)
	cmdtest.Isolate(t)
	t.Setenv(apicmd.EnvToken, "env-token")
	_, errOut, err := login(t, "", hub, "--token", goodToken)
	if err != nil || errOut != "Note: ARGOSY_TOKEN is set, and commands use it before this context.\n" {
		t.Errorf("login with ARGOSY_TOKEN set: %v, stderr %q", err, errOut)
	}
	for server, want := range map[string]bool{
		"http://hub.example.com": true, "https://hub.example.com": false, "http://127.0.0.1:8080": false,
		"http://[::1]:8080": false, "http://localhost:8080": false, "http://10.0.0.1": true,
	} {
		if got := cleartext(server); got != want {
			t.Errorf("cleartext(%q) = %v", server, got)
		}
	}
}

// TestLogout removes the token of the current context and of a named one,
// and checks the errors.
func TestLogout(t *testing.T) {
	path := cmdtest.Isolate(t)
	cfg := &config.Config{CurrentContext: "prod", Contexts: []config.Context{
		{Name: "prod", Server: "https://hub", Token: "t1", Project: "payments"},
		{Name: "dev", Server: "http://dev", Token: "t2"},
	}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args    []string
		out     string
		wantErr string
	}{
		{args: nil, out: "Logged out of https://hub; context prod has no token now\n"},
		{args: []string{"prod"}, out: "Context prod has no token\n"},
		{args: []string{"dev"}, out: "Logged out of http://dev; context dev has no token now\n"},
		{args: []string{"nope"}, wantErr: `no context "nope" in ` + path + ": known contexts are prod, dev"},
	}
	for _, s := range steps {
		out, _, err := cmdtest.Run(t, func(io cmdkit.IOStreams) *cobra.Command { return NewCmdLogout(io, nil) },
			append([]string{"logout"}, s.args...)...)
		if s.wantErr != "" {
			if err == nil || err.Error() != s.wantErr {
				t.Errorf("logout %v: error %v, want %q", s.args, err, s.wantErr)
			}
			continue
		}
		if err != nil || out != s.out {
			t.Errorf("logout %v: %q, %v; want %q", s.args, out, err, s.out)
		}
	}
	got, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &config.Config{CurrentContext: "prod", Contexts: []config.Context{
		{Name: "prod", Server: "https://hub", Project: "payments"}, {Name: "dev", Server: "http://dev"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config after logging out of both (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config file mode %v, %v; want 0600", fi.Mode(), err)
	}

	cfg.CurrentContext = ""
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	if err := logoutRun(t.Context(), &LogoutOptions{IO: cmdkit.IOStreams{Out: &bytes.Buffer{}}}); err == nil ||
		!strings.Contains(err.Error(), "no current context") || !strings.Contains(err.Error(), "argosy logout NAME") {
		t.Errorf("logout with no current context: %v", err)
	}
}
