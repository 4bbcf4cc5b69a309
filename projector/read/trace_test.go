package read_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestSpans checks that each request is a server span named after its
// route, continuing the caller's trace, with its status.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	q := readtest.Fleet()
	h := newHandler(q, read.WithTracerProvider(tp))

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/clusters/prod-eu", http.NoBody)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	q.Err = errors.New("store down")
	get(t, h, http.MethodGet, "/api/v1/audit")

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	s := spans[0]
	if s.Name() != "GET /api/v1/clusters/{name}" || s.Parent().TraceID().String() != traceID || !s.Parent().IsRemote() {
		t.Errorf("span %q, parent %v", s.Name(), s.Parent())
	}
	if !hasAttr(s.Attributes(), attribute.Int("http.response.status_code", 200)) ||
		!hasAttr(s.Attributes(), attribute.String("http.route", "/api/v1/clusters/{name}")) {
		t.Errorf("attributes %v", s.Attributes())
	}
	s = spans[1]
	if s.Status().Code != codes.Error || len(s.Events()) != 1 || !hasAttr(s.Attributes(), attribute.Int("http.response.status_code", 500)) {
		t.Errorf("failed request's span: status %v, events %v, attributes %v", s.Status(), s.Events(), s.Attributes())
	}
}

func hasAttr(attrs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, a := range attrs {
		if a == want {
			return true
		}
	}
	return false
}
