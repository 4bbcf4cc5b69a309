// Package browsertest starts Debian's Chromium, headless, for tests of the
// web dashboard, and drives it with chromedp. Each Browser is its own
// process with its own profile, so two of them are two users. It records
// every console error and uncaught exception of the pages it loads.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// EnvChromium names another Chromium binary.
const EnvChromium = "ARGOSY_CHROMIUM"

// Path returns the Chromium to run: $ARGOSY_CHROMIUM, else chromium on
// PATH.
func Path() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", errors.New("chromium is not installed: run `make test-tools` (on Debian, as root, it runs apt-get install chromium), or set " + EnvChromium)
	}
	return p, nil
}

// Browser is what one headless Chromium's pages reported.
type Browser struct {
	mu  sync.Mutex
	bad []string
}

// New starts a Chromium that stops when the test ends, and returns the
// chromedp context of its first tab. It uses only loopback: every
// background service that would reach out is off.
func New(t testing.TB) (context.Context, *Browser) {
	t.Helper()
	path, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser has gone.
	profile, err := os.MkdirTemp("", "argosy-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter"),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				b.record("console error: " + strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.record(fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		cancel()
		cancelAlloc()
		removeProfile(t, profile)
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		removeProfile(t, profile)
	})
	return ctx, b
}

func (b *Browser) record(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bad = append(b.bad, s)
}

// Errors returns the console errors and uncaught exceptions so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bad...)
}

// removeProfile removes a profile directory, trying again while the last of
// Chromium's processes finish writing to it.
func removeProfile(t testing.TB, dir string) {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("removing the browser profile: %v", err)
}

// EnvScreenshots names the directory Screenshot saves pages in.
const EnvScreenshots = "ARGOSY_SCREENSHOTS"

// Screenshot saves ctx's page, whole, as NAME.png in the directory
// $ARGOSY_SCREENSHOTS names, and does nothing when it is not set.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		return
	}
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
