package root

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// run runs the argosy command with args and returns its exit code, stdout
// and stderr, as the binary would. Call cmdtest.Isolate first.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errOut}
	cmd := NewRoot(io)
	cmd.SetArgs(append([]string{}, args...))
	code = cmdkit.Execute(t.Context(), cmd, io)
	return code, out.String(), errOut.String()
}

func TestVersionAndCompletion(t *testing.T) {
	cmdtest.Isolate(t)
	code, out, _ := run(t, "version", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "version: dev") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "VERSION  COMMIT  GO\ndev  ") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d\n%.200s", code, out)
	}
	cfg := &config.Config{Contexts: []config.Context{{Name: "prod", Server: "https://hub"}, {Name: "dev", Server: "http://dev"}}}
	if err := cfg.Save(os.Getenv(config.EnvConfig)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"__complete", "fleet", "--context", ""}, {"__complete", "ctx", "use", ""}} {
		code, out, _ = run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "prod\ndev\n:4\n") {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// TestUsageErrors checks that the root and every noun under it turn a bad
// flag or argument into exit code 2 and the pointer at --help, and any
// other failure into exit code 1.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"nope"}, 1, `Error: unknown command "nope" for "argosy"`},
		{[]string{"version", "-o", "xml"}, 2, `unknown output format "xml"`},
		{[]string{"events", "types", "--family", "nope"}, 2, `unknown family "nope"`},
		{[]string{"projector"}, 2, "--hub-key is required"},
		{[]string{"fleet", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"cluster", "get"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"app", "status", "a", "b"}, 2, "accepts at most 1 arg(s)"},
		{[]string{"audit", "--from", "yesterday"}, 2, `--from "yesterday"`},
		{[]string{"audit", "verify", "extra"}, 2, `unknown command "extra"`},
		{[]string{"report", "deployments"}, 2, "--by is required"},
		{[]string{"context", "use"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"context", "current"}, 1, "no current context"},
		{[]string{"fleet", "--context", "nope"}, 2, `--context "nope": no such context`},
		{[]string{"fleet", "--server", "http://127.0.0.1:1"}, 1, "read API: "},
		{[]string{"cluster", "register", "prod", "--keys-dir", "a", "--public-keys", "b"}, 2, "give --keys-dir or --public-keys, not both"},
		{[]string{"app", "apply", "--cluster", "prod"}, 2, "-f is required"},
		{[]string{"app", "rollback", "guestbook", "--cluster", "prod"}, 2, "--history-id is required"},
		{[]string{"project", "delete", "web"}, 2, "--cluster is required"},
		{[]string{"repo", "add", "charts", "--cluster", "prod", "--url", "https://x", "--password", "secret"}, 2, "unknown flag: --password"},
		{[]string{"repo", "add", "charts", "--cluster", "prod", "--url", "https://x", "--username", "bot"}, 2, "--username needs a password"},
		{[]string{"cluster", "list", "--server", "http://127.0.0.1:1"}, 1, "calling the hub at http://127.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmdtest.Isolate(t)
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant it to hold %q", code, tc.code, stderr, tc.wantErr)
			}
			if hint := "Run 'argosy <command> --help' for usage.\n"; strings.HasSuffix(stderr, hint) != (tc.code == 2) {
				t.Errorf("stderr %q: the --help hint is for usage errors only", stderr)
			}
		})
	}
}

// TestReadCommandsExplainRefusals runs every command that calls the server
// against one that refuses the current context's token, and checks that
// each says which hub refused which token and how to log in again.
func TestReadCommandsExplainRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		if _, err := w.Write([]byte(`{"error":"token expired"}`)); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	want := `Error: the hub at ` + srv.URL + ` refused the token from context "hub" (401 Unauthorized): token expired; ` +
		`run: argosy login ` + srv.URL + ` --token TOKEN --name hub` + "\n"
	for _, args := range [][]string{
		{"fleet"}, {"cluster", "get", "prod-eu"}, {"app", "status"}, {"audit"}, {"audit", "verify"},
		{"report", "deployments", "--by", "app"},
		{"cluster", "list"}, {"cluster", "label", "prod-eu", "a=b"}, {"cluster", "deregister", "prod-eu"}, {"app", "list"},
		{"app", "get", "guestbook"}, {"app", "sync", "guestbook", "--cluster", "prod-eu"}, {"project", "list"}, {"repo", "list"},
		{"repo", "remove", "charts", "--cluster", "prod-eu"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			path := cmdtest.Isolate(t)
			cfg := &config.Config{CurrentContext: "hub", Contexts: []config.Context{{Name: "hub", Server: srv.URL, Token: "old"}}}
			if err := cfg.Save(path); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, args...)
			if code != 1 || stderr != want {
				t.Errorf("exit %d, stderr\n%s\nwant\n%s", code, stderr, want)
			}
		})
	}
}

// TestLoginThenRead logs in to a hub that serves the read API behind a
// bearer token, reads the fleet with the context login made, logs out, and
// checks that the fleet then says how to log in again.
func TestLoginThenRead(t *testing.T) {
	const token = "t0k3n"
	api := read.New(readtest.Fleet(), read.WithClock(readtest.Now))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := `{"actor":"alice","role":"viewer","projects":[],"clusters":""}`
		switch {
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.WriteHeader(http.StatusUnauthorized)
			body = `{"error":"missing or invalid bearer token"}`
		case r.URL.Path != "/api/v1/whoami":
			api.ServeHTTP(w, r)
			return
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	cmdtest.Isolate(t)

	steps := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"login", srv.URL, "--token", token, "--name", "hub"}, stdout: "Logged in to " + srv.URL + " as alice (viewer); context hub\n"},
		{args: []string{"fleet"}, stdout: "3 clusters: "},
		{args: []string{"context", "current"}, stdout: "hub\n"},
		{args: []string{"logout"}, stdout: "Logged out of " + srv.URL + "; context hub has no token now\n"},
		{args: []string{"fleet"}, code: 1, stderr: "Error: the hub at " + srv.URL + " wants a token and none was sent (401 Unauthorized): " +
			"missing or invalid bearer token; run: argosy login " + srv.URL + " --token TOKEN --name hub\n"},
		{args: []string{"fleet", "--token", token}, stdout: "3 clusters: "},
	}
	for _, s := range steps {
		code, stdout, stderr := run(t, s.args...)
		if code != s.code || !strings.HasPrefix(stdout, s.stdout) || stderr != s.stderr {
			t.Fatalf("argosy %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout from %q, stderr %q",
				strings.Join(s.args, " "), code, stdout, stderr, s.code, s.stdout, s.stderr)
		}
	}
}

// TestCompletionOfHubObjects completes cluster, Application, AppProject
// and repository names from the hub the command line names, and nothing,
// quietly, from a hub that is not there.
func TestCompletionOfHubObjects(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	h.Register(nil, "prod-eu", "prod-us")
	h.Apply(api.KindApplications, cmdtest.AppManifest("billing", "default"), "prod-eu")
	h.Apply(api.KindApplications, cmdtest.AppManifest("guestbook", "default"), "prod-us")
	h.Apply(api.KindAppProjects, cmdtest.ProjectManifest("web"), "prod-us")
	if _, err := h.Client.PutRepository(t.Context(), "prod-us", "argocd", "charts", api.RepositoryRequest{URL: "https://charts.example", Type: "helm"},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	hub := []string{"--server", h.URL, "--token", h.Viewer}
	tests := []struct {
		args []string
		want string
	}{
		{append([]string{"__complete", "cluster", "deregister"}, append(hub, "")...), "prod-eu\nprod-us\n:4\n"},
		{append([]string{"__complete", "cluster", "label", "prod-eu"}, append(hub, "")...), ":4\n"},
		{append([]string{"__complete", "app", "sync"}, append(hub, "--cluster", "")...), "prod-eu\nprod-us\n:4\n"},
		{append([]string{"__complete", "app", "sync", "--cluster", "prod-us"}, append(hub, "")...), "guestbook\n:4\n"},
		{append([]string{"__complete", "app", "get"}, append(hub, "b")...), "billing\n:4\n"},
		{append([]string{"__complete", "app", "list"}, append(hub, "--project", "")...), "web\n:4\n"},
		{append([]string{"__complete", "project", "delete"}, append(hub, "")...), "web\n:4\n"},
		{append([]string{"__complete", "repo", "remove"}, append(hub, "")...), "charts\n:4\n"},
		{[]string{"__complete", "cluster", "deregister", "--server", "http://127.0.0.1:1", ""}, ":4\n"},
		{[]string{"__complete", "app", "delete", "--token", "wrong", "--server", h.URL, ""}, ":4\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, _ := run(t, tc.args...)
			if code != 0 || !strings.HasPrefix(out, tc.want) {
				t.Errorf("exit %d\n%s\nwant it to begin\n%s", code, out, tc.want)
			}
		})
	}
}
