package httpserve

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CheckInterval is how often, at most, a Certificate reads its files
// again: on a handshake at least this long after the last check.
const CheckInterval = time.Second

// Certificate is a TLS certificate and its key, read from two PEM files
// and read again when they change, so that a certificate renewed in place
// (by cert-manager, or the kubelet updating a mounted Secret) is presented
// on the next handshakes without a restart. A handshake at least
// CheckInterval after the last check reads both files; when their content
// changed and they make a valid pair, it is presented from then on. A new
// pair that does not load (a half-written renewal, a key that does not
// match) is logged and counted once, and the last good pair is kept.
//
// Its methods are safe for concurrent use.
type Certificate struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time
	readFile          func(string) ([]byte, error)

	mu      sync.Mutex // guards the fields below
	checked time.Time
	cert    *tls.Certificate
	// loaded and failed are the files' content last loaded and last
	// refused, so that unchanged files are not parsed again and a bad
	// pair is reported once.
	loaded, failed [2][]byte
	// readErr is the last error reading the files, reported once too.
	readErr string

	failures atomic.Int64
}

// CertOption configures a Certificate.
type CertOption func(*Certificate)

// WithCertLogger sets where a refused pair is logged (default: nowhere).
func WithCertLogger(l *slog.Logger) CertOption { return func(c *Certificate) { c.log = l } }

// NewCertificate reads the pair in certFile and keyFile; the first must
// load.
func NewCertificate(certFile, keyFile string, opts ...CertOption) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile, log: slog.New(slog.DiscardHandler), now: time.Now, readFile: os.ReadFile}
	for _, o := range opts {
		o(c)
	}
	if err := c.init(); err != nil {
		return nil, err
	}
	return c, nil
}

// init loads the first pair.
func (c *Certificate) init() error {
	pem, err := c.read()
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(pem[0], pem[1])
	if err != nil {
		return fmt.Errorf("tls certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.loaded, c.checked = &cert, pem, c.now()
	return nil
}

func (c *Certificate) read() ([2][]byte, error) {
	cert, cerr := c.readFile(c.certFile)
	key, kerr := c.readFile(c.keyFile)
	if err := errors.Join(cerr, kerr); err != nil {
		return [2][]byte{}, fmt.Errorf("tls certificate: %w", err)
	}
	return [2][]byte{cert, key}, nil
}

// GetCertificate returns the current pair, having read the files again if
// CheckInterval has passed since they were last read: it is
// tls.Config.GetCertificate.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= CheckInterval {
		c.checked = now
		c.reload()
	}
	return c.cert, nil
}

// reload reads the files and takes a changed, valid pair; c.mu is held.
// Each failure is counted and logged once, until the files change again.
func (c *Certificate) reload() {
	pem, err := c.read()
	switch {
	case err != nil && err.Error() == c.readErr:
		return // reported already
	case err != nil:
		c.readErr = err.Error()
	case same(pem, c.loaded), same(pem, c.failed):
		c.readErr = ""
		return // unchanged, or refused already
	default:
		c.readErr = ""
		cert, perr := tls.X509KeyPair(pem[0], pem[1])
		if perr != nil {
			// The files may have been swapped between the two reads (the
			// kubelet's ..data symlink): that is no failed renewal; the
			// next check reads them again.
			if again, err := c.read(); err == nil && !same(again, pem) {
				return
			}
		}
		if perr == nil {
			c.cert, c.loaded, c.failed = &cert, pem, [2][]byte{}
			c.log.Info("tls certificate reloaded", "cert", c.certFile)
			return
		}
		c.failed, err = pem, fmt.Errorf("tls certificate %s and key %s: %w", c.certFile, c.keyFile, perr)
	}
	c.failures.Add(1)
	c.log.Error("tls certificate not reloaded: keeping the previous one", "err", err)
}

func same(a, b [2][]byte) bool { return bytes.Equal(a[0], b[0]) && bytes.Equal(a[1], b[1]) }

// Failures counts the new pairs that could not be loaded since the first.
func (c *Certificate) Failures() int64 { return c.failures.Load() }

// TLSConfig returns a server configuration presenting c, TLS 1.2 at least.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}
