package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/argosy-spoke/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/spoke"
)

func TestKeygenWritesLoadableKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	var out bytes.Buffer
	cmd := cli.NewRoot(cmdkit.IOStreams{Out: &out, Err: &out})
	cmd.SetArgs([]string{"keygen", "--cluster", "prod-eu-1", "--dir", dir})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out.String())
	}
	k, err := spoke.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spoke.SigningKeyFile, spoke.SealingKeyFile} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	// The loaded sealing key opens what is sealed to the published key.
	pub := k.Public("prod-eu-1")
	if pub[1].KeyID != k.Sealing.ID() || pub[0].Owner != "prod-eu-1" {
		t.Errorf("public keys %+v", pub)
	}
	sealed, err := events.Seal(k.Sealing.Public, []byte("token"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := events.Open(sealed, k.Sealing); err != nil || string(got) != "token" {
		t.Errorf("open with loaded key: %q, %v", got, err)
	}
	// A second keygen never overwrites.
	cmd = cli.NewRoot(cmdkit.IOStreams{Out: &out, Err: &out})
	cmd.SetArgs([]string{"keygen", "--cluster", "prod-eu-1", "--dir", dir})
	if err := cmd.Execute(); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second keygen: %v, want an 'exists' error", err)
	}
	again, err := spoke.LoadKeys(dir)
	if err != nil || !again.Signing.Equal(k.Signing) {
		t.Errorf("keys changed after a refused keygen: %v", err)
	}
}

// TestVersionPrintsJSON keeps argosy-spoke version's default: indented
// JSON, as it has always printed.
func TestVersionPrintsJSON(t *testing.T) {
	var out bytes.Buffer
	cmd := cli.NewRoot(cmdkit.IOStreams{Out: &out, Err: &out})
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"version\": \"dev\",\n  \"goVersion\": \"" + runtime.Version() + "\"\n}\n"; out.String() != want {
		t.Errorf("version printed %q, want %q", out.String(), want)
	}
}

// TestClockMarginFlag checks --clock-margin: 2 s unless set, from the flag
// or ARGOSY_CLOCK_MARGIN, and never zero.
func TestClockMarginFlag(t *testing.T) {
	run := func(args ...string) (*cli.RunOptions, error) {
		var got *cli.RunOptions
		cmd := cli.NewCmdRun(func(_ context.Context, o *cli.RunOptions) error { got = o; return nil })
		cmd.SetArgs(append([]string{"--cluster", "c1", "--kafka-brokers", "127.0.0.1:9092", "--keys-dir", "k", "--hub-key", "hub.pub"}, args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return got, cmd.Execute()
	}
	for _, c := range []struct {
		args []string
		env  string
		want time.Duration
	}{{nil, "", 2 * time.Second}, {[]string{"--clock-margin", "50ms"}, "", 50 * time.Millisecond}, {nil, "20ms", 20 * time.Millisecond}} {
		t.Setenv("ARGOSY_CLOCK_MARGIN", c.env)
		got, err := run(c.args...)
		if err != nil {
			t.Fatalf("%v env %q: %v", c.args, c.env, err)
		}
		if got.ClockMargin != c.want {
			t.Errorf("%v env %q: --clock-margin %s, want %s", c.args, c.env, got.ClockMargin, c.want)
		}
	}
	t.Setenv("ARGOSY_CLOCK_MARGIN", "")
	if _, err := run("--clock-margin", "0s"); err == nil || !strings.Contains(err.Error(), "--clock-margin") {
		t.Errorf("--clock-margin 0s: %v, want it refused", err)
	}
}

// TestSigFormFlag checks --sig-form: compact unless set, from the flag or
// ARGOSY_SIG_FORM, and nothing but compact or dsse.
func TestSigFormFlag(t *testing.T) {
	run := func(args ...string) (*cli.RunOptions, error) {
		var got *cli.RunOptions
		cmd := cli.NewCmdRun(func(_ context.Context, o *cli.RunOptions) error { got = o; return nil })
		cmd.SetArgs(append([]string{"--cluster", "c1", "--kafka-brokers", "127.0.0.1:9092", "--keys-dir", "k", "--hub-key", "hub.pub"}, args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return got, cmd.Execute()
	}
	for _, c := range []struct {
		args      []string
		env, want string
	}{{nil, "", "compact"}, {[]string{"--sig-form", "dsse"}, "", "dsse"}, {nil, "dsse", "dsse"}} {
		if c.env != "" {
			t.Setenv("ARGOSY_SIG_FORM", c.env)
		}
		got, err := run(c.args...)
		if err != nil {
			t.Fatalf("%v env %q: %v", c.args, c.env, err)
		}
		if got.SigForm != c.want {
			t.Errorf("%v env %q: --sig-form %s, want %s", c.args, c.env, got.SigForm, c.want)
		}
	}
	if _, err := run("--sig-form", "json"); err == nil || !strings.Contains(err.Error(), "--sig-form") {
		t.Errorf("--sig-form json: %v, want it refused", err)
	}
}
