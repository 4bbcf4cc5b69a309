package read

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

const instrumentation = "github.com/argosyproj/argosy/projector/read"

// Defaults of the handler's options.
const (
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultChainPage         = 1000
	// DefaultAuditLimit and MaxAuditLimit bound the audit entries of one
	// response.
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// Handler serves the read API. It holds no state of its own between
// requests; every answer comes from the Query.
type Handler struct {
	q         projector.Query
	mux       *http.ServeMux
	heartbeat time.Duration
	chainPage int
	now       func() time.Time
	reporter  Reporter
	// o holds the logger and tracer provider (WithLogger,
	// WithTracerProvider) and their defaults.
	o      events.Common
	tracer trace.Tracer
}

// Option configures a Handler.
type Option func(*Handler)

// WithHeartbeatInterval sets the clusters' heartbeat interval (default 30s):
// a cluster is connected while its last heartbeat is younger than three
// intervals. A value ≤ 0 keeps the default.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.heartbeat = d
		}
	}
}

// WithReporter replaces the computation of deployment reports (default:
// report.Deployments, without commit times). nil keeps the default.
func WithReporter(r Reporter) Option {
	return func(h *Handler) {
		if r != nil {
			h.reporter = r
		}
	}
}

// WithLogger sets where internal errors are logged (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.o.Log = l } }

// WithTracerProvider sets the provider of the handler's spans (default: the
// global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(h *Handler) { h.o.Tracers = tp } }

// WithClock sets the clock that decides which clusters are connected and
// where a report's default range ends (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(h *Handler) {
		if now != nil {
			h.now = now
		}
	}
}

// WithChainPage sets how many audit entries the chain verification reads at
// a time (default 1000). A value ≤ 0 keeps the default.
func WithChainPage(n int) Option {
	return func(h *Handler) {
		if n > 0 {
			h.chainPage = n
		}
	}
}

// route is one endpoint. The routes are the API: openapi.yaml documents
// each, and a test holds the two to the same set.
type route struct {
	method, path string
	serve        func(h *Handler, r *http.Request) (any, error)
}

// routes returns the API's endpoints.
func routes() []route {
	return []route{
		{http.MethodGet, "/api/v1/clusters", (*Handler).clusters},
		{http.MethodGet, "/api/v1/clusters/{name}", (*Handler).cluster},
		{http.MethodGet, "/api/v1/clusters/{cluster}/applications", (*Handler).clusterApps},
		{http.MethodGet, "/api/v1/applications", (*Handler).apps},
		{http.MethodGet, "/api/v1/audit", (*Handler).audit},
		{http.MethodGet, "/api/v1/audit/timeline", (*Handler).timeline},
		{http.MethodGet, "/api/v1/audit/verify", (*Handler).verify},
		{http.MethodGet, "/api/v1/audit/chain", (*Handler).chain},
		{http.MethodGet, "/api/v1/deployments", (*Handler).deployments},
		{http.MethodGet, "/api/v1/reports/deployments", (*Handler).report},
		{http.MethodGet, "/api/v1/reports/rollouts", (*Handler).rollouts},
		{http.MethodGet, "/api/v1/openapi.yaml", nil},
	}
}

// Paths returns the paths of the read API's routes, each a GET, as
// ServeMux patterns: a server that mounts the read API under a larger mux
// answers another method on them with a 405.
func Paths() []string {
	var out []string
	for _, rt := range routes() {
		out = append(out, rt.path)
	}
	return out
}

// New returns the read API's handler over q. Mount it at the root, or under
// "/api/v1/" of a larger mux: it serves paths starting with /api/v1/ only.
func New(q projector.Query, opts ...Option) *Handler {
	h := &Handler{
		q:         Scoped(q),
		mux:       http.NewServeMux(),
		heartbeat: DefaultHeartbeatInterval,
		chainPage: DefaultChainPage,
		now:       time.Now,
		reporter:  ReporterFunc(reportDeployments),
	}
	for _, o := range opts {
		o(h)
	}
	h.o.SetDefaults()
	h.tracer = h.o.Tracers.Tracer(instrumentation)
	for _, rt := range routes() {
		pattern := rt.method + " " + rt.path
		if rt.serve == nil {
			h.mux.Handle(pattern, h.traced(pattern, rt.path, http.HandlerFunc(h.serveOpenAPI)))
			continue
		}
		h.mux.Handle(pattern, h.traced(pattern, rt.path, h.jsonHandler(rt.serve)))
	}
	return h
}

// ServeHTTP serves the API. Requests that match no route get a JSON 404, or a
// JSON 405 with the Allow header.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern != "" {
		h.mux.ServeHTTP(w, r)
		return
	}
	// Every route is a GET: if a GET would match, the method is wrong.
	get := r.Clone(r.Context())
	get.Method = http.MethodGet
	if _, pattern := h.mux.Handler(get); pattern != "" {
		w.Header().Set("Allow", "GET, HEAD")
		h.writeError(r.Context(), w, &apiError{status: http.StatusMethodNotAllowed,
			msg: fmt.Sprintf("method %s not allowed: the read API is read-only", r.Method)})
		return
	}
	h.writeError(r.Context(), w, notFound("no endpoint %s (see /api/v1/openapi.yaml)", r.URL.Path))
}

func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	h.write(r.Context(), w, schemas.OpenAPI)
}

// traced wraps next in a server span named after the route's pattern
// ("GET /api/v1/clusters/{name}"), continuing the caller's trace from its
// traceparent header.
func (h *Handler) traced(pattern, route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := h.tracer.Start(ctx, pattern, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method),
				attribute.String("http.route", route), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// jsonHandler writes what serve returns as JSON, or its error as an error
// body with the status the error's class calls for.
func (h *Handler) jsonHandler(serve func(*Handler, *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := serve(h, r)
		if err != nil {
			h.writeError(r.Context(), w, err)
			return
		}
		h.writeJSON(r.Context(), w, http.StatusOK, v)
	})
}

// apiError is an error the client caused or should know about: its message
// is sent as it is.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

func (h *Handler) writeError(ctx context.Context, w http.ResponseWriter, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		h.writeJSON(ctx, w, ae.status, errorBody{Error: ae.msg})
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// The client went away; nobody reads the answer.
		h.writeJSON(ctx, w, http.StatusServiceUnavailable, errorBody{Error: "request canceled"})
	default:
		trace.SpanFromContext(ctx).RecordError(err)
		h.o.Log.ErrorContext(ctx, "read API request failed", "err", err)
		h.writeJSON(ctx, w, http.StatusInternalServerError, errorBody{Error: "internal error"})
	}
}

func (h *Handler) writeJSON(ctx context.Context, w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.o.Log.ErrorContext(ctx, "encoding a read API response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	h.write(ctx, w, append(b, '\n'))
}

// write writes a response body. An error means the client went away, which
// only the debug log hears about.
func (h *Handler) write(ctx context.Context, w http.ResponseWriter, b []byte) {
	if _, err := w.Write(b); err != nil {
		h.o.Log.DebugContext(ctx, "writing a read API response", "err", err)
	}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// StatusOf returns the HTTP status and message of an error that this
// package's functions (ListFleet, say) return for a request the caller got
// wrong, and false for any other error.
func StatusOf(err error) (int, string, bool) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.msg, true
	}
	return 0, "", false
}
