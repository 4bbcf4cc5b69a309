package cli

import (
	"bytes"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestDevListenTaken: when --listen is taken (another argosy dev, say),
// the error names the flag, as it did when argosy-hub dev bound it, and
// exits 1.
func TestDevListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	io := cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}
	root := NewRoot(io)
	root.SetArgs([]string{"--data-dir", filepath.Join(t.TempDir(), "dev"), "--listen", ln.Addr().String(),
		"--metrics-address", "127.0.0.1:0", "--clusters", "1", "-q"})
	done := make(chan int, 1)
	go func() { done <- cmdkit.Execute(t.Context(), root, io) }()
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("argosy-dev ran on a taken --listen")
	}
	if want := "Error: --listen: listen tcp " + ln.Addr().String(); !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr %q, want it to begin %q", errb.String(), want)
	}
}
