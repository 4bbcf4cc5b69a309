package cmdkit_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestExecuteExitCodes checks the exit code and what is printed for
// success, a failure and a usage error.
func TestExecuteExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		args    []string
		code    int
		wantErr string
	}{
		{name: "ok", args: []string{"sub"}, code: 0},
		{name: "failure", args: []string{"sub"}, err: errors.New("boom"), code: 1, wantErr: "Error: boom\n"},
		{name: "usage", args: []string{"sub"}, err: &cmdkit.FlagError{Err: errors.New("bad flag")}, code: 2,
			wantErr: "Error: bad flag\nRun 'tool <command> --help' for usage.\n"},
		{name: "timeout", args: []string{"sub"}, err: fmt.Errorf("waiting: %w", &cmdkit.ExitError{Code: cmdkit.ExitTimeout, Err: errors.New("gave up")}),
			code: 3, wantErr: "Error: waiting: gave up\n"},
		{name: "wrong arguments", args: []string{"sub", "extra"}, code: 2,
			wantErr: "Error: unknown command \"extra\" for \"tool sub\"\nRun 'tool <command> --help' for usage.\n"},
		{name: "unknown flag", args: []string{"sub", "--nope"}, code: 2, wantErr: "Error: unknown flag: --nope\n\nUsage:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			io := cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errOut}
			root := &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true}
			root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
			root.AddCommand(&cobra.Command{Use: "sub", Args: cmdkit.UsageArgs(cobra.NoArgs),
				RunE: func(*cobra.Command, []string) error { return tc.err }})
			root.SetArgs(tc.args)
			if code := cmdkit.Execute(t.Context(), root, io); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if !strings.HasPrefix(errOut.String(), tc.wantErr) || (tc.wantErr == "") != (errOut.Len() == 0) {
				t.Errorf("stderr %q, want it to begin with %q", errOut.String(), tc.wantErr)
			}
		})
	}
}
