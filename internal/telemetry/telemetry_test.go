package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// TestMetricsEndpoint serves the handler and checks that OpenTelemetry and
// franz-go metrics both reach /metrics, and that /healthz answers. kfake
// stands in for a broker: this is a test of wiring, not of Kafka.
func TestMetricsEndpoint(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel, err := Setup(ctx, "argosy-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	c, err := otel.Meter("test").Int64Counter("argosy.test.count")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 3)

	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cl, err := kgo.NewClient(append(tel.KafkaOpts("test"), kgo.SeedBrokers(fake.ListenAddrs()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(tel.Handler())
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	for _, want := range []string{`argosy_test_count_total{otel_scope_name="test",otel_scope_schema_url="",otel_scope_version=""} 3`, `argosy_kafka_produce_bytes_total{client="test"`, "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if got := get(t, srv.URL+"/healthz"); got != "" {
		t.Errorf("/healthz answered %q", got)
	}
}

// get returns the body of a 200 answer to GET url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// TestPprofOnlyWhenAsked checks that Go's profiles are served only with
// ARGOSY_PPROF=true.
func TestPprofOnlyWhenAsked(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	tel, err := Setup(t.Context(), "argosy-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for _, on := range []string{"", "true"} {
		t.Setenv(EnvPprof, on)
		srv := httptest.NewServer(tel.Handler())
		resp, err := http.Get(srv.URL + "/debug/pprof/goroutine?debug=1") //nolint:noctx // a test server
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if want := map[string]int{"": http.StatusNotFound, "true": http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("%s=%q: /debug/pprof/goroutine answered %d, want %d", EnvPprof, on, resp.StatusCode, want)
		}
	}
}

// TestReadyz: /readyz answers 200 when every check passes, and 503 with
// each failing check's error otherwise; a check that outlasts
// ReadyTimeout fails; /healthz answers 200 either way.
func TestReadyz(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	tel, err := Setup(t.Context(), "argosy-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("kafka: dial tcp 127.0.0.1:9: connection refused") }
	slow := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, c := range []struct {
		name   string
		checks []Check
		code   int
		body   string
	}{
		{"no checks", nil, http.StatusOK, "ok"},
		{"all pass", []Check{ok, ok}, http.StatusOK, "ok"},
		{"one fails", []Check{ok, down}, http.StatusServiceUnavailable, "not ready: kafka: dial tcp 127.0.0.1:9: connection refused"},
		{"one hangs", []Check{slow}, http.StatusServiceUnavailable, "context deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(tel.Handler(c.checks...))
			defer srv.Close()
			for path, want := range map[string]int{"/readyz": c.code, "/healthz": http.StatusOK} {
				resp, err := http.Get(srv.URL + path) //nolint:noctx // a test server
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != want || (path == "/readyz" && !strings.Contains(string(b), c.body)) {
					t.Errorf("%s: %d %q, want %d with %q", path, resp.StatusCode, b, want, c.body)
				}
			}
		})
	}
}

// TestUnexportedSpansPassTheTraceOn checks that, with no trace exporter
// configured, spans are not recorded and the trace context of an event's
// caller passes through unchanged, for the next component that exports
// to continue.
func TestUnexportedSpansPassTheTraceOn(t *testing.T) {
	for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(v, "")
	}
	tel, err := Setup(t.Context(), "argosy-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, Remote: true})
	_, span := otel.Tracer("test").Start(trace.ContextWithRemoteSpanContext(t.Context(), caller), "apply")
	defer span.End()
	if span.IsRecording() {
		t.Error("a span nothing exports is recorded")
	}
	if got := span.SpanContext(); got.TraceID() != caller.TraceID() || got.SpanID() != caller.SpanID() || !got.IsSampled() {
		t.Errorf("span context %v, want the caller's %v passed on", got, caller)
	}
}
