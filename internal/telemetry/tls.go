package telemetry

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/internal/httpserve"
)

// ServeTLS loads a server's certificate and key, to be read again when
// they change (httpserve.Certificate), and counts in the counter name the
// new pairs that did not load, when the server kept presenting the last
// good certificate. It returns the TLS configuration to serve with.
func (t *Telemetry) ServeTLS(certFile, keyFile, name string, log *slog.Logger) (*tls.Config, error) {
	cert, err := httpserve.NewCertificate(certFile, keyFile, httpserve.WithCertLogger(log))
	if err != nil {
		return nil, err
	}
	_, err = t.meter.Meter("github.com/argosyproj/argosy/internal/httpserve").Int64ObservableCounter(name,
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
