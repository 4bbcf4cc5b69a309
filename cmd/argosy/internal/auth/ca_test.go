package auth

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// newTLSHub is newHub over TLS with a certificate a private CA signed; it
// returns the hub's URL and the CA bundle's path.
func newTLSHub(t *testing.T) (url, caFile string) {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "private CA")
	certFile, keyFile := ca.WriteFiles(t, dir, "hub")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+goodToken {
			w.WriteHeader(http.StatusUnauthorized)
		}
		if _, err := w.Write([]byte(`{"actor":"alice","role":"viewer","items":[]}`)); err != nil {
			t.Error(err)
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, filepath.Join(dir, "ca.crt")
}

// TestLoginCertificateAuthority logs in to a hub whose certificate a
// private CA signed: without --certificate-authority the login fails and
// says to give it; with it (a relative path) it succeeds and the context
// keeps the bundle's absolute path, which a later command's client trusts,
// and a login again without the flag keeps it.
func TestLoginCertificateAuthority(t *testing.T) {
	hub, caFile := newTLSHub(t)
	path := cmdtest.Isolate(t)
	if _, _, err := login(t, "", hub, "--token", goodToken, "--name", "private"); err == nil || !strings.Contains(err.Error(), "--certificate-authority") {
		t.Fatalf("login without the CA: %v, want an error naming --certificate-authority", err)
	}
	t.Chdir(filepath.Dir(caFile))
	if _, _, err := login(t, "", hub, "--token", goodToken, "--name", "private", "--certificate-authority", filepath.Base(caFile)); err != nil {
		t.Fatalf("login with the CA: %v", err)
	}
	if _, _, err := login(t, "", hub, "--token", goodToken, "--name", "private"); err != nil {
		t.Fatalf("login again, without the flag: %v", err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if x := cfg.Find("private"); x == nil || x.CertificateAuthority != caFile {
		t.Fatalf("context %+v, want certificateAuthority %s", x, caFile)
	}
	c, err := (&apicmd.Options{}).Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Placements(t.Context()); err != nil {
		t.Errorf("a command with the context's CA: %v", err)
	}
	bare := &apicmd.Options{Server: hub}
	t.Setenv(config.EnvConfig, filepath.Join(t.TempDir(), "none.yaml"))
	rc, err := bare.Client()
	if err != nil {
		t.Fatal(err)
	}
	_, err = rc.Clusters(t.Context())
	if err = bare.Explain(err); err == nil || !strings.Contains(err.Error(), "--certificate-authority") {
		t.Errorf("a command without the CA: %v, want an error naming --certificate-authority", err)
	}
}
