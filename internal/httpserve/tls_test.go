package httpserve_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// TestServeTLS serves over TLS with a Certificate on files: a client that
// trusts the CA is answered, plain HTTP and TLS 1.1 are not; a certificate
// written over the files is presented on a new handshake without a
// restart, and a broken pair written over it keeps the last good one.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	certFile, keyFile := ca.WriteFiles(t, dir, "first")
	cert, err := httpserve.NewCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- httpserve.Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }),
			httpserve.WithTLS(cert.TLSConfig()))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	resp, err := ca.Client().Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "ok" {
		t.Fatalf("over TLS: %q, %v", body, err)
	}
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200")
		}
	}
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11}); err == nil { //nolint:gosec // the test offers TLS 1.1 to see it refused
		c.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}

	presented := func() string {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := presented(); cn != "first" {
		t.Fatalf("presents %q, want first", cn)
	}
	ca.WriteFiles(t, dir, "second")
	waitPresented(t, presented, "second")
	tlstest.Replace(t, certFile, []byte("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n"))
	time.Sleep(2 * httpserve.CheckInterval)
	if cn := presented(); cn != "second" {
		t.Errorf("after a broken certificate: presents %q, want the last good one, second", cn)
	}
	if cert.Failures() != 1 {
		t.Errorf("%d failures counted, want 1", cert.Failures())
	}
}

func waitPresented(t *testing.T, presented func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for cn := presented(); cn != want; cn = presented() {
		if time.Now().After(deadline) {
			t.Fatalf("presents %q 10 s after the files changed, want %q", cn, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
