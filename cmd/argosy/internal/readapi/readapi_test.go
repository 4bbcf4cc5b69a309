package readapi_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/readapi"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestServerFlag checks --server's default, ARGOSY_SERVER and the flag.
func TestServerFlag(t *testing.T) {
	tests := []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, readapi.DefaultServer},
		{"http://projector:8080", nil, "http://projector:8080"},
		{"http://projector:8080", []string{"--server", "http://other:1"}, "http://other:1"},
	}
	for _, tc := range tests {
		t.Run(tc.env+strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv(readapi.EnvServer, tc.env)
			var opts readapi.Options
			cmd := &cobra.Command{Use: "reader", RunE: func(*cobra.Command, []string) error { return nil }}
			readapi.AddFlags(cmd, &opts)
			cmd.SetArgs(append([]string{}, tc.args...)) // nil would be os.Args
			cmd.SetOut(&bytes.Buffer{})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if opts.Server != tc.want {
				t.Errorf("server %q, want %q", opts.Server, tc.want)
			}
		})
	}
}

// TestParseTime checks the time flags' values: empty, RFC 3339 with any
// offset, and anything else, a usage error.
func TestParseTime(t *testing.T) {
	got, err := readapi.ParseTime("from", "2026-03-01T01:00:00.5+01:00")
	if want := time.Date(2026, 3, 1, 0, 0, 0, 5e8, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("ParseTime: %v, %v; want %v", got, err, want)
	}
	if got, err := readapi.ParseTime("from", ""); err != nil || !got.IsZero() {
		t.Errorf("ParseTime of nothing: %v, %v; want the zero time", got, err)
	}
	_, err = readapi.ParseTime("to", "03/01/2026")
	if err == nil || !errors.As(err, new(*cmdkit.FlagError)) || !strings.HasPrefix(err.Error(), `--to "03/01/2026": want an RFC 3339 time`) {
		t.Errorf("ParseTime of a bad time: %v, want a FlagError", err)
	}
}
