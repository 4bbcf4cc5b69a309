//go:build unix

package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestDevRefusesOverOpenFileLimit: with an open-file limit too low for
// --clusters, argosy-dev refuses to start and says what to raise, rather
// than start and have its broker fail to take connections later.
func TestDevRefusesOverOpenFileLimit(t *testing.T) {
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	low := was
	low.Cur = min(was.Cur, 2048)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
			t.Error(err)
		}
	})
	var out, errb bytes.Buffer
	io := cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}
	root := NewRoot(io)
	dir := filepath.Join(t.TempDir(), "dev")
	root.SetArgs([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0", "--clusters", "200", "-q"})
	done := make(chan int, 1)
	go func() { done <- cmdkit.Execute(t.Context(), root, io) }()
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	case <-time.After(time.Minute): // a bound on a wait, not a measure
		t.Fatal("argosy-dev started 200 clusters with 2048 open files")
	}
	if want := "--clusters 200 needs about 3824 open files"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}
