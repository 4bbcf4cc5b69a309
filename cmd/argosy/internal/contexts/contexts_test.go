package contexts

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

const secret = "s3cr3t-t0k3n"

// writeConfig writes a config of two contexts, prod current, to a
// temporary ARGOSY_CONFIG and returns its path.
func writeConfig(t *testing.T) string {
	t.Helper()
	path := cmdtest.Isolate(t)
	cfg := &config.Config{CurrentContext: "prod", Contexts: []config.Context{
		{Name: "prod", Server: "https://hub.example.com", Token: secret, Project: "payments"},
		{Name: "dev", Server: "http://127.0.0.1:8080"},
	}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestContextFlags(t *testing.T) {
	list, err := cmdtest.Parse(t, NewCmdContextList, []string{"-o", "yaml"})
	if err != nil || list.Output != "yaml" {
		t.Errorf("list -o yaml: %+v, %v", list, err)
	}
	use, err := cmdtest.Parse(t, NewCmdContextUse, []string{"prod"})
	if err != nil || use.Name != "prod" {
		t.Errorf("use prod: %+v, %v", use, err)
	}
	del, err := cmdtest.Parse(t, NewCmdContextDelete, []string{"dev"})
	if err != nil || del.Name != "dev" {
		t.Errorf("delete dev: %+v, %v", del, err)
	}
	if _, err := cmdtest.Parse(t, NewCmdContextCurrent, nil); err != nil {
		t.Errorf("current: %v", err)
	}
}

// TestContextErrors checks the usage errors, and the errors about contexts
// that are not there.
func TestContextErrors(t *testing.T) {
	tests := []struct {
		args      []string
		flagError bool
		text      string
	}{
		{[]string{"context", "list", "-o", "csv"}, true, `unknown output format "csv"`},
		{[]string{"context", "list", "extra"}, true, `unknown command "extra"`},
		{[]string{"context", "use"}, true, "accepts 1 arg(s), received 0"},
		{[]string{"context", "delete", "a", "b"}, true, "accepts 1 arg(s), received 2"},
		{[]string{"context", "current", "x"}, true, `unknown command "x"`},
		{[]string{"context", "use", "nope"}, false, `no context "nope" in CONFIG: known contexts are prod, dev`},
		{[]string{"ctx", "rm", "nope"}, false, `no context "nope" in CONFIG: known contexts are prod, dev`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			path := writeConfig(t)
			_, _, err := cmdtest.Run(t, NewCmdContext, tc.args...)
			want := strings.ReplaceAll(tc.text, "CONFIG", path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want %q", err, want)
			}
			if got := errors.As(err, new(*cmdkit.FlagError)); got != tc.flagError {
				t.Errorf("FlagError %v, want %v", got, tc.flagError)
			}
		})
	}
}

// TestContextList checks each format, and that no token is printed.
func TestContextList(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"context", "list"}, `CURRENT  NAME  SERVER                   PROJECT   TOKEN
*        prod  https://hub.example.com  payments  set
         dev   http://127.0.0.1:8080    -         none
`},
		{[]string{"ctx", "ls", "-o", "json"}, `[
  {
    "name": "prod",
    "current": true,
    "server": "https://hub.example.com",
    "project": "payments",
    "hasToken": true
  },
  {
    "name": "dev",
    "current": false,
    "server": "http://127.0.0.1:8080",
    "hasToken": false
  }
]
`},
		{[]string{"context", "list", "-o", "yaml"}, `- current: true
  hasToken: true
  name: prod
  project: payments
  server: https://hub.example.com
- current: false
  hasToken: false
  name: dev
  server: http://127.0.0.1:8080
`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			writeConfig(t)
			out, _, err := cmdtest.Run(t, NewCmdContext, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if strings.Contains(out, secret) {
				t.Errorf("list prints a token:\n%s", out)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		cmdtest.Isolate(t)
		out, errOut, err := cmdtest.Run(t, NewCmdContext, "context", "list")
		if err != nil || out != "" || !strings.Contains(errOut, "argosy login SERVER") {
			t.Errorf("list of no contexts: %v, stdout %q, stderr %q", err, out, errOut)
		}
		out, _, err = cmdtest.Run(t, NewCmdContext, "context", "list", "-o", "json")
		if err != nil || out != "[]\n" {
			t.Errorf("list -o json of no contexts: %v, %q", err, out)
		}
	})
}

// TestContextUseCurrentDelete switches, reads and deletes contexts and
// checks what each leaves in the file.
func TestContextUseCurrentDelete(t *testing.T) {
	path := writeConfig(t)
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := cmdtest.Run(t, NewCmdContext, args...)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return out, errOut
	}
	if out, _ := run("context", "current"); out != "prod\n" {
		t.Errorf("current: %q", out)
	}
	if out, _ := run("context", "use", "dev"); out != "Switched to context dev (http://127.0.0.1:8080)\n" {
		t.Errorf("use dev: %q", out)
	}
	if out, _ := run("ctx", "current"); out != "dev\n" {
		t.Errorf("current after use: %q", out)
	}
	if out, errOut := run("context", "delete", "prod"); out != "Deleted context prod\n" || errOut != "" {
		t.Errorf("delete prod: %q, %q", out, errOut)
	}
	if out, errOut := run("context", "delete", "dev"); out != "Deleted context dev\n" || !strings.Contains(errOut, "current context") {
		t.Errorf("delete of the current context: %q, %q", out, errOut)
	}
	cfg, err := config.Load(path)
	if err != nil || len(cfg.Contexts) != 0 || cfg.CurrentContext != "" {
		t.Errorf("config after deleting both: %+v, %v", cfg, err)
	}
	_, _, err = cmdtest.Run(t, NewCmdContext, "context", "current")
	if !errors.Is(err, ErrNoCurrent) || !strings.Contains(err.Error(), "argosy login SERVER") {
		t.Errorf("current of none: %v", err)
	}
}

// TestContextCompletion checks that use, delete and --context complete the
// contexts' names, and a second argument nothing.
func TestContextCompletion(t *testing.T) {
	writeConfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "context", "use", ""}, "prod\ndev\n:4\n"},
		{[]string{"__complete", "ctx", "rm", "d"}, "prod\ndev\n:4\n"},
		{[]string{"__complete", "context", "use", "prod", ""}, ":4\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, err := cmdtest.Run(t, NewCmdContext, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, tc.want) {
				t.Errorf("completions %q, want %q", out, tc.want)
			}
		})
	}
}
