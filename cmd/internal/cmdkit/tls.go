package cmdkit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// CAClient returns an HTTP client that trusts the system's CAs and, in
// addition, those of the PEM bundle in caFile: for a server whose
// certificate a private CA signed. An empty caFile is a nil client (the
// caller's default, the system's CAs alone).
func CAClient(caFile string) (*http.Client, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system pool on this platform: the bundle alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA bundle %s: no PEM certificate in it", caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t}, nil
}

// Untrusted reports whether err is a server certificate the client could
// not verify (an unknown CA, an expired certificate, another host's name):
// the caller then says which option gives a CA bundle.
func Untrusted(err error) bool { return errors.As(err, new(*tls.CertificateVerificationError)) }
