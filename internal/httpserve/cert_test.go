package httpserve

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// fakeFiles is a file system of two files whose reads can be made to fail.
type fakeFiles struct {
	mu    sync.Mutex
	files map[string][]byte
	fail  error
	reads int
}

func (f *fakeFiles) read(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.fail != nil {
		return nil, f.fail
	}
	b, ok := f.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

func (f *fakeFiles) set(cert, key []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files["tls.crt"], f.files["tls.key"] = cert, key
}

func commonName(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.Subject.CommonName
}

// TestCertificateReload steps a Certificate's clock over files that
// change, break and fail to read: a changed valid pair is taken on the
// first handshake CheckInterval after the last check and not before; a
// half-written renewal (new certificate, old key), garbage and a read
// error each keep the last good pair and are counted and logged once.
func TestCertificateReload(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	certA, keyA := ca.Issue(t, "a")
	certB, keyB := ca.Issue(t, "b")
	certC, keyC := ca.Issue(t, "c")
	files := &fakeFiles{files: map[string][]byte{}}
	files.set(certA, keyA)
	now := time.Unix(1_000_000, 0)
	var logs bytes.Buffer
	c := &Certificate{certFile: "tls.crt", keyFile: "tls.key", log: slog.New(slog.NewTextHandler(&logs, nil)),
		now: func() time.Time { return now }, readFile: files.read}
	if err := c.init(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name         string
		change       func()
		advance      time.Duration
		want         string
		wantFailures int64
	}{
		{"unchanged", func() {}, 2 * time.Second, "a", 0},
		{"changed, within the interval", func() { files.set(certB, keyB) }, CheckInterval / 2, "a", 0},
		{"changed, after the interval", func() {}, CheckInterval, "b", 0},
		{"half-written: new certificate, old key", func() { files.set(certC, keyB) }, CheckInterval, "b", 1},
		{"the same bad pair again", func() {}, CheckInterval, "b", 1},
		{"garbage", func() { files.set([]byte("not pem"), keyC) }, CheckInterval, "b", 2},
		{"unreadable", func() { files.fail = errors.New("injected read error") }, CheckInterval, "b", 3},
		{"still unreadable", func() {}, CheckInterval, "b", 3},
		{"readable again, valid", func() { files.fail = nil; files.set(certC, keyC) }, CheckInterval, "c", 3},
	}
	for _, s := range steps {
		s.change()
		now = now.Add(s.advance)
		got, err := c.GetCertificate(nil)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if cn := commonName(t, got); cn != s.want || c.Failures() != s.wantFailures {
			t.Errorf("%s: presents %q with %d failures, want %q with %d", s.name, cn, c.Failures(), s.want, s.wantFailures)
		}
	}
	if n := strings.Count(logs.String(), "not reloaded"); n != 3 {
		t.Errorf("%d failures logged, want 3:\n%s", n, logs.String())
	}
	reads := files.reads
	for range 100 { // within the interval: no reads
		if _, err := c.GetCertificate(nil); err != nil {
			t.Fatal(err)
		}
	}
	if files.reads != reads {
		t.Errorf("%d reads within one interval, want none", files.reads-reads)
	}
}

// TestNewCertificateRefusesABadPair: the first pair must load.
func TestNewCertificateRefusesABadPair(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	certFile, keyFile := ca.WriteFiles(t, dir, "a")
	_, otherKey := ca.Issue(t, "b")
	if err := os.WriteFile(keyFile, otherKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCertificate(certFile, keyFile); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Errorf("a mismatched pair: %v, want an error naming %s", err, certFile)
	}
	if _, err := NewCertificate(certFile+".missing", keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want ErrNotExist", err)
	}
}

// TestCertificateUnderConcurrentHandshakes: fifty handshakes at once, while
// the pair is renewed again and again, each get a whole pair, the old or
// the new, and no renewal is counted as failed (run with -race).
func TestCertificateUnderConcurrentHandshakes(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	certA, keyA := ca.Issue(t, "a")
	certB, keyB := ca.Issue(t, "b")
	files := &fakeFiles{files: map[string][]byte{}}
	files.set(certA, keyA)
	var clock atomic.Int64
	c := &Certificate{certFile: "tls.crt", keyFile: "tls.key", log: slog.New(slog.DiscardHandler),
		now: func() time.Time { return time.Unix(0, clock.Load()) }, readFile: files.read}
	if err := c.init(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			for range 200 {
				got, err := c.GetCertificate(nil)
				if err != nil || got == nil || len(got.Certificate) == 0 {
					errs <- fmt.Errorf("GetCertificate = %v, %w", got, err)
					return
				}
				x, err := x509.ParseCertificate(got.Certificate[0])
				if err != nil || (x.Subject.CommonName != "a" && x.Subject.CommonName != "b") {
					errs <- fmt.Errorf("presented %v, %w", x, err)
					return
				}
			}
		})
	}
	for i := range 100 {
		if i%2 == 0 {
			files.set(certB, keyB)
		} else {
			files.set(certA, keyA)
		}
		clock.Add(int64(CheckInterval))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := c.Failures(); n != 0 {
		t.Errorf("%d renewals counted as failed, want 0", n)
	}
}
