package root

import (
	"bytes"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// run runs the argosy command with args and returns its exit code, stdout
// and stderr, as the binary would.
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
		{[]string{"fleet", "--server", "http://127.0.0.1:1"}, 1, "read API: "},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("ARGOSY_SERVER", "")
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
