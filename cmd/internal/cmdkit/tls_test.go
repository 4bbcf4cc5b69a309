package cmdkit_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// TestCAClient calls a server whose certificate a private CA signed: the
// default client does not trust it and says so (Untrusted), a CAClient of
// that CA's bundle does; a file without a certificate is an error.
func TestCAClient(t *testing.T) {
	ca := tlstest.NewCA(t, "private CA")
	dir := t.TempDir()
	certFile, keyFile := ca.WriteFiles(t, dir, "server")
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	cert, err := tlsPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = cert
	srv.StartTLS()
	defer srv.Close()

	if _, err := http.Get(srv.URL); err == nil || !cmdkit.Untrusted(err) { //nolint:noctx // a loopback call
		t.Errorf("default client: %v, want an untrusted certificate", err)
	}
	hc, err := cmdkit.CAClient(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL) //nolint:noctx // a loopback call
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	resp.Body.Close()
	if hc, err := cmdkit.CAClient(""); hc != nil || err != nil {
		t.Errorf("no file: %v, %v; want nil, nil", hc, err)
	}
	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cmdkit.CAClient(bad); err == nil {
		t.Error("a file without a certificate: no error")
	}
}

func tlsPair(certFile, keyFile string) (*tls.Config, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}, nil
}
