// Package cmdtest runs the argosy commands in their packages' tests: under
// a root set up as the real one, against a read API serving readtest's
// fleet or a real hub on an in-memory broker (StartHub), with golden files
// for what they print. Tests alone import it.
package cmdtest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Isolate keeps the test's commands away from the user's argosy config
// and environment: ARGOSY_CONFIG names a file in a new temporary
// directory, which does not exist yet, and ARGOSY_SERVER, ARGOSY_TOKEN and
// ARGOSY_CONTEXT are empty until the test ends. It returns the config
// file's path.
func Isolate(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	t.Setenv(config.EnvConfig, path)
	for _, name := range []string{apicmd.EnvServer, apicmd.EnvToken, apicmd.EnvContext} {
		t.Setenv(name, "")
	}
	return path
}

// Run runs the command newCmd returns as a child of a root named argosy,
// set up as the real root is (a flag that does not parse is a
// cmdkit.FlagError), with args, such as "fleet", "-o", "json". It returns
// what the command wrote to stdout and to stderr.
func Run(t testing.TB, newCmd func(cmdkit.IOStreams) *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return RunWithInput(t, newCmd, "", args...)
}

// RunWithInput is Run with stdin on standard input.
func RunWithInput(t testing.TB, newCmd func(cmdkit.IOStreams) *cobra.Command, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := cmdkit.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}
	root := &cobra.Command{Use: "argosy", SilenceUsage: true, SilenceErrors: true}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
	root.AddCommand(newCmd(io))
	root.SetArgs(append([]string{}, args...)) // nil would be os.Args
	err = root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// Parse runs the flag parsing and checks of the command newCmd returns
// with args, and returns the options that reached its run function.
func Parse[O any](t testing.TB, newCmd func(cmdkit.IOStreams, func(context.Context, *O) error) *cobra.Command, args []string) (*O, error) {
	t.Helper()
	var got *O
	cmd := newCmd(cmdkit.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return got, cmd.Execute()
}

// ReadServer serves q through the read API on 127.0.0.1, seen at
// readtest.Now, until the test ends, and returns its URL.
func ReadServer(t testing.TB, q *readtest.Query) string {
	t.Helper()
	srv := httptest.NewServer(read.New(q, read.WithClock(readtest.Now)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// CompareGolden compares got with testdata/name, or rewrites it when the test
// runs with -update.
func CompareGolden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update in this package to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// Golden is a run of a read command whose output must equal a golden file.
type Golden struct {
	// File is the golden file's name in testdata/.
	File string
	// Args are the command line from the noun on, without --server.
	Args []string
}

// ReadCommands runs newCmd's read commands against server and compares
// each output with its golden file.
func ReadCommands(t *testing.T, newCmd func(cmdkit.IOStreams) *cobra.Command, server string, runs []Golden) {
	t.Helper()
	Isolate(t)
	for _, r := range runs {
		t.Run(r.File, func(t *testing.T) {
			out, _, err := Run(t, newCmd, append(slices.Clone(r.Args), "--server", server)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			CompareGolden(t, r.File, out)
		})
	}
}

// Failure is a run of a command that must fail.
type Failure struct {
	// Args are the command line from the noun on.
	Args []string
	// FlagError says whether the error must be a usage error.
	FlagError bool
	// Text is part of the error's text.
	Text string
}

// ReadCommandErrors runs each failure and checks its error.
func ReadCommandErrors(t *testing.T, newCmd func(cmdkit.IOStreams) *cobra.Command, runs []Failure) {
	t.Helper()
	Isolate(t)
	for _, r := range runs {
		t.Run(strings.Join(r.Args, " "), func(t *testing.T) {
			_, _, err := Run(t, newCmd, r.Args...)
			if err == nil || !strings.Contains(err.Error(), r.Text) {
				t.Fatalf("error %v, want %q", err, r.Text)
			}
			if got := errors.As(err, new(*cmdkit.FlagError)); got != r.FlagError {
				t.Errorf("FlagError %v, want %v (%v)", got, r.FlagError, err)
			}
		})
	}
}

// ReadCommandsHelp checks that the help of each read command (a command
// line from the noun on) has examples, --server, --context, --token and
// -o, and prints no token even when ARGOSY_TOKEN holds one.
func ReadCommandsHelp(t *testing.T, newCmd func(cmdkit.IOStreams) *cobra.Command, commands ...[]string) {
	t.Helper()
	Isolate(t)
	const secret = "help-must-not-print-this"
	t.Setenv(apicmd.EnvToken, secret)
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, _, err := Run(t, newCmd, append(slices.Clone(args), "--help")...)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Examples:", "argosy " + strings.Join(args, " "), "--server", "--context", "--token", "-o, --output"} {
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, secret) {
				t.Errorf("help prints ARGOSY_TOKEN's token:\n%s", out)
			}
		})
	}
}
