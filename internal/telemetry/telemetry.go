// Package telemetry configures OpenTelemetry and Prometheus for Argosy's
// binaries. Only cmd uses it: libraries use the OpenTelemetry API alone and
// inherit whatever this package installs.
//
// Traces are exported as the standard OTEL_* variables say (OTLP by default
// once an OTLP endpoint is set; nothing is exported when no exporter or
// endpoint is configured, though trace context still propagates). Metrics,
// OpenTelemetry's and franz-go's, are served in the Prometheus format on
// /metrics by Handler; cmd serves it.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kotel"
	"github.com/twmb/franz-go/plugin/kprom"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Telemetry is the process's tracer and meter providers and its Prometheus
// registry.
type Telemetry struct {
	Registry *prometheus.Registry
	tracer   trace.TracerProvider
	// stopTracer flushes and stops the tracer provider, if it exports.
	stopTracer func(context.Context) error
	meter      *sdkmetric.MeterProvider
}

// Setup installs global OpenTelemetry providers and the W3C trace context
// propagator for service, and returns them for shutdown.
func Setup(ctx context.Context, service, version string) (*Telemetry, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register collector: %w", err)
		}
	}
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	t := &Telemetry{
		Registry: reg,
		meter:    sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(promExp)),
		// Spans that nothing exports are not recorded: a no-op provider
		// passes the trace context an event carries on unchanged, so the
		// next component that exports continues the caller's trace. A
		// recording provider would cost memory for every span (a fetched
		// record's, while it waits in the client's buffer) and start span
		// ids no exporter ever shows.
		tracer:     noop.NewTracerProvider(),
		stopTracer: func(context.Context) error { return nil },
	}
	if tracesConfigured() {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("span exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
		t.tracer, t.stopTracer = tp, tp.Shutdown
	}
	otel.SetTracerProvider(t.tracer)
	otel.SetMeterProvider(t.meter)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return t, nil
}

// tracesConfigured reports whether the OTEL_* environment asks for trace
// export.
func tracesConfigured() bool {
	for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return os.Getenv("OTEL_TRACES_EXPORTER") != "none"
		}
	}
	return false
}

// KafkaOpts returns franz-go hooks that trace produce and consume calls
// (kotel) and export client metrics labelled with client (kprom). client must
// be unique among the process's Kafka clients: kprom registers its metrics
// once per label.
//
// kotel's propagator is empty on purpose: trace context travels in the
// event's ce_traceparent, not in a second, bare traceparent header.
func (t *Telemetry) KafkaOpts(client string) []kgo.Opt {
	tracer := kotel.NewTracer(kotel.TracerProvider(t.tracer),
		kotel.TracerPropagator(propagation.NewCompositeTextMapPropagator()))
	k := kotel.NewKotel(kotel.WithTracer(tracer))
	m := kprom.NewMetrics("argosy_kafka", kprom.Registry(t.Registry),
		kprom.WithStaticLabel(prometheus.Labels{"client": client}))
	return []kgo.Opt{kgo.WithHooks(append(k.Hooks(), m)...)}
}

// EnvPprof names the variable that, set to "true", adds Go's profiles
// (net/http/pprof, under /debug/pprof/) to Handler. Off by default: a
// profile shows the process's internals to whoever reaches the address.
const EnvPprof = "ARGOSY_PPROF"

// Check reports whether a component can do its work now: nil, or what
// it cannot reach.
type Check func(context.Context) error

// ReadyTimeout bounds one /readyz answer; a check that takes longer fails.
const ReadyTimeout = 3 * time.Second

// Handler serves /metrics, the registry in the Prometheus text format;
// /healthz, which answers 200 while the process serves at all (a liveness
// probe); /readyz, which answers 200 when every check in ready passes
// within ReadyTimeout and 503 with their errors otherwise (a readiness
// probe: Kafka and the store reachable); and, with ARGOSY_PPROF=true,
// /debug/pprof/. cmd serves it on the metrics address.
func (t *Telemetry) Handler(ready ...Check) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		var errs []error
		for _, c := range ready {
			errs = append(errs, c(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	if os.Getenv(EnvPprof) == "true" {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Shutdown flushes and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.stopTracer(ctx), t.meter.Shutdown(ctx))
}

// ShutdownLogged is Shutdown for a command's defer: it shuts down even
// after ctx ended, and logs a failure to log.
func (t *Telemetry) ShutdownLogged(ctx context.Context, log *slog.Logger) {
	if err := t.Shutdown(context.WithoutCancel(ctx)); err != nil {
		log.ErrorContext(ctx, "telemetry shutdown", "err", err)
	}
}
