package cmdkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/internal/httpserve"
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

// ServeTLS loads a server's certificate and key, to be read again when
// they change (httpserve.Certificate), and counts the new pairs that did
// not load in the counter name of meter: the server kept presenting the
// last good certificate. It returns the TLS configuration to serve with.
func ServeTLS(certFile, keyFile, meter, name string, log *slog.Logger) (*tls.Config, error) {
	cert, err := httpserve.NewCertificate(certFile, keyFile, httpserve.WithCertLogger(log))
	if err != nil {
		return nil, err
	}
	_, err = otel.Meter(meter).Int64ObservableCounter(name,
		metric.WithDescription("New --tls-cert and --tls-key pairs that did not load: the last good certificate was kept."),
		metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
			obs.Observe(cert.Failures())
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("tls metrics: %w", err)
	}
	return cert.TLSConfig(), nil
}
