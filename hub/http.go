package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// route is one endpoint of the hub's own. openapi.yaml documents each, and
// a test holds the two to the same set.
type route struct {
	method, path, action string
	serve                func(s *Server, r *http.Request, c *call) (any, error)
	// params are the query parameters the route takes besides dryRun,
	// which every write takes.
	params []string
}

func routes() []route {
	return []route{
		{http.MethodGet, "/api/v1/whoami", auth.ActionRead, (*Server).whoami, nil},
		{http.MethodGet, "/api/v1/objects", auth.ActionRead, (*Server).objects, []string{"cluster", "kind"}},
		{http.MethodPut, "/api/v1/clusters/{name}", auth.ActionRegisterCluster, (*Server).registerCluster, nil},
		{http.MethodDelete, "/api/v1/clusters/{name}", auth.ActionDeregister, (*Server).deregisterCluster, []string{"reason"}},
		{http.MethodPost, "/api/v1/applications", auth.ActionApplyApplication, (*Server).applyApplication, nil},
		{http.MethodDelete, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}", auth.ActionDeleteApp, (*Server).deleteApplication, []string{"cascade"}},
		{http.MethodPost, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}/operations", auth.ActionOperate, (*Server).operate, nil},
		{http.MethodGet, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}/tree", auth.ActionInspect, (*Server).tree, []string{"timeout"}},
		{http.MethodGet, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}/diff", auth.ActionInspect, (*Server).diff, []string{"timeout"}},
		{http.MethodGet, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}/manifest", auth.ActionInspect, (*Server).manifest,
			[]string{"timeout", "group", "version", "kind", "resourceNamespace", "resourceName"}},
		{http.MethodGet, "/api/v1/clusters/{cluster}/applications/{namespace}/{name}/logs", auth.ActionLogs, (*Server).logs,
			[]string{"timeout", "resourceNamespace", "resourceName", "container", "tailLines", "sinceSeconds", "timestamps"}},
		{http.MethodPost, "/api/v1/appprojects", auth.ActionApplyProject, (*Server).applyProject, nil},
		{http.MethodDelete, "/api/v1/clusters/{cluster}/appprojects/{namespace}/{name}", auth.ActionDeleteProject, (*Server).deleteProject, nil},
		{http.MethodPut, "/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", auth.ActionApplyRepository, (*Server).putRepository, nil},
		{http.MethodDelete, "/api/v1/clusters/{cluster}/repositories/{namespace}/{name}", auth.ActionDeleteRepository, (*Server).deleteRepository, nil},
		{http.MethodGet, "/api/v1/placements", auth.ActionRead, (*Server).placements, []string{"clusters"}},
		{http.MethodPost, "/api/v1/placements", auth.ActionApplyPlacement, (*Server).applyPlacement, nil},
		{http.MethodDelete, "/api/v1/placements/{namespace}/{name}", auth.ActionDeletePlacement, (*Server).deletePlacement, nil},
	}
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes() {
		pattern := rt.method + " " + rt.path
		mux.Handle(pattern, s.traced(pattern, s.handle(rt)))
	}
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		doc, err := OpenAPI()
		if err != nil {
			s.o.Log.ErrorContext(r.Context(), "converting the OpenAPI document to JSON", "err", err)
			http.Error(w, "the OpenAPI document does not convert to JSON", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(doc); err != nil {
			s.o.Log.DebugContext(r.Context(), "writing the OpenAPI document", "err", err)
		}
	})
	// A spoke joining proves its join token instead of a bearer token.
	mux.Handle("POST /api/v1/clusters/{name}/join", s.traced("POST /api/v1/clusters/{name}/join", http.HandlerFunc(s.join)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-s.ready:
		default:
			http.Error(w, "the hub is reading the log", http.StatusServiceUnavailable)
			return
		}
		// A replica whose key was retired writes nothing, audit records
		// included: out of rotation until it restarts with its successor.
		if err := s.signingErr(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	if s.o.read != nil {
		read := route{action: auth.ActionRead, serve: nil}
		mux.Handle("GET /api/v1/", s.handle(read))
	}
	if s.o.dashboard != nil {
		s.dashboardRoutes(mux)
	}
	return mux
}

// call is what one API call did, for its audit record.
type call struct {
	id string
	p  *auth.Principal
	// method, path and remote are the request's; placements reconciled
	// by the hub itself have their own.
	method, path, remote string
	// idempotencyKey is the request's Idempotency-Key; dryRun its
	// ?dryRun. query is the query and If-Match as the digest takes them, body
	// the digest of the body decode read (idempotency.go).
	idempotencyKey string
	query, body    string
	dryRun         bool
	action         string
	cluster        string
	target         string
	events         []string
	// via and placement are the audit record's: the hub's placer acts
	// for the author of the placement change it carries out.
	via       string
	placement *schemas.PlacementRef
	// audited is set when the call's audit record went into the
	// transaction of the events it wrote.
	audited bool
}

// apiError is an error the caller should see as it is.
type apiError struct {
	status int
	body   api.Error
}

func (e *apiError) Error() string { return e.body.Error }

func failf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, body: api.Error{Error: fmt.Sprintf(format, args...)}}
}

// handle authenticates, serves and audits one call. A read route with no
// serve function is the read API's.
func (s *Server) handle(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitBody(w, r)
		c := &call{id: uuid.NewString(), action: rt.action, cluster: r.PathValue("cluster"), target: target(r),
			method: r.Method, path: r.URL.EscapedPath(), remote: r.RemoteAddr, idempotencyKey: r.Header.Get(api.HeaderIdempotencyKey),
			query: canonicalQuery(r)}
		var dryErr error
		c.dryRun, dryErr = boolParam(r, "dryRun", false)
		if c.cluster == "" && strings.HasPrefix(rt.path, "/api/v1/clusters/{name}") {
			c.cluster = r.PathValue("name")
		}
		p, err := s.auth.authenticate(r)
		if err != nil {
			s.finish(w, r, c, nil, s.refuseUnauthenticated(r, &apiError{status: auth.Status(err), body: api.Error{Error: err.Error(), Hint: authHint(r, err)}}))
			return
		}
		c.p = p
		if user, groups := r.Header.Get(api.HeaderActAsUser), r.Header.Values(api.HeaderActAsGroup); user != "" || len(groups) > 0 {
			// A call made for a Kubernetes or Argo CD user: its grants,
			// audited as the user, via the token that relayed it.
			q, err := p.ActFor(r.Header.Get(api.HeaderActAsSource), user, groups)
			if err != nil {
				s.finish(w, r, c, nil, err)
				return
			}
			c.p, c.via = q, q.Via()
		}
		if err := c.p.Allow(rt.action, "", nil, ""); err != nil {
			s.finish(w, r, c, nil, err)
			return
		}
		if err := errors.Join(checkQuery(r, rt), dryErr); err != nil {
			s.finish(w, r, c, nil, err)
			return
		}
		if err := checkPathNames(r, rt.path); err != nil {
			s.finish(w, r, c, nil, err)
			return
		}
		if rt.serve == nil {
			s.serveRead(w, r, c)
			return
		}
		v, err := rt.serve(s, r, c)
		s.finish(w, r, c, v, err)
	})
}

// serveRead passes a read to the read API once its audit record is
// durable (unless reads are not audited).
func (s *Server) serveRead(w http.ResponseWriter, r *http.Request, c *call) {
	if s.o.auditReads {
		if err := s.auditCall(r, c, http.StatusOK); err != nil {
			s.writeError(w, r, failf(http.StatusServiceUnavailable, "the call could not be audited, so it was not served: %v", err))
			return
		}
	}
	// The read API shows only what the caller's limits hold.
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.o.read.ServeHTTP(sw, r.WithContext(read.WithScope(r.Context(), c.p)))
	// A refused read is audited as a refused write is, with its status,
	// whether or not reads are: the record above, if any, said only that
	// the call was let through to the read API.
	if sw.status >= 400 {
		if err := s.auditCall(r, c, sw.status); err != nil {
			s.o.Log.ErrorContext(r.Context(), "auditing a refused read", "err", err, "request", c.id)
		}
	}
}

// finish audits the call, unless its write did, and answers it.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, c *call, v any, err error) {
	status := http.StatusOK
	if err != nil {
		err = s.classify(r.Context(), err)
		var ae *apiError
		errors.As(err, &ae)
		status = ae.status
	}
	if !c.audited && c.p != nil && (c.action != auth.ActionRead || s.o.auditReads || status >= 400) {
		if aerr := s.auditCall(r, c, status); aerr != nil {
			s.o.Log.ErrorContext(r.Context(), "auditing a call", "err", aerr, "request", c.id)
			if err == nil && len(c.events) == 0 {
				err = failf(http.StatusServiceUnavailable, "the call could not be audited, so it was not served: %v", aerr)
			}
		}
	}
	s.inst.request(r.Context(), c.action, status)
	if err != nil {
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(r.Context(), w, http.StatusOK, v)
}

// classify turns any error into an apiError.
func (s *Server) classify(ctx context.Context, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case eventError(err) != nil:
		return eventError(err)
	case errors.Is(err, auth.ErrDenied):
		return failf(http.StatusForbidden, "%v", err)
	case errors.Is(err, ErrBusy), errors.Is(err, ErrUnsettled):
		return failf(http.StatusServiceUnavailable, "%v", err)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return failf(http.StatusServiceUnavailable, "request canceled")
	}
	trace.SpanFromContext(ctx).RecordError(err)
	s.o.Log.ErrorContext(ctx, "hub request failed", "err", err)
	return failf(http.StatusInternalServerError, "internal error: %v", err)
}

// refuseUnauthenticated counts a call that presented no credential the
// hub accepts, which is not audited, and answers it with err, or with 429
// once its source address is past the limit of such calls.
func (s *Server) refuseUnauthenticated(r *http.Request, err *apiError) *apiError {
	if !s.unauth.allow(r.RemoteAddr) {
		s.inst.unauthenticated(r.Context(), "limited")
		return &apiError{status: http.StatusTooManyRequests, body: api.Error{
			Error: "too many calls without a valid credential from this address: the hub answers every further one with 429 for now, and records none of them",
			Hint:  "retry in a few seconds with a token the hub accepts"}}
	}
	s.inst.unauthenticated(r.Context(), "refused")
	return err
}

// auditCall appends the call's audit record. A call by no principal is
// not audited (see refuseUnauthenticated). A replica whose key readers no
// longer accept appends nothing: the record would be refused by every
// reader, so the call fails instead.
func (s *Server) auditCall(r *http.Request, c *call, status int) error {
	if c.p == nil {
		return nil
	}
	if err := s.signingErr(); err != nil {
		return err
	}
	e, err := s.auditEvent(c, status)
	if err != nil {
		return err
	}
	_, err = s.audit.Publish(r.Context(), e)
	return err
}

func (s *Server) auditEvent(c *call, status int) (*event.Event, error) {
	actor := "anonymous"
	if c.p != nil {
		actor = c.p.Actor
	}
	outcome := "allowed"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		outcome = "denied"
	case status >= 400:
		outcome = "failed"
	}
	// A path may be as long as the server takes a request line (1 MiB): an
	// audit record of it whole would be past the log's limit on an event,
	// and the call would go unrecorded.
	data := schemas.AuditRecorded{RequestID: c.id, Actor: actor, Action: c.action, Method: c.method, Path: clip(c.path, maxAuditedPath),
		Cluster: c.cluster, Target: clip(c.target, maxAuditedPath), Outcome: outcome, StatusCode: status, RemoteAddr: c.remote, EventIDs: c.events,
		Via: c.via, Placement: c.placement}
	subject, key := "", "hub"
	if validName(c.cluster) {
		subject, key = events.Subject{Cluster: c.cluster}.String(), c.cluster
	} else {
		data.Cluster = ""
	}
	return events.New(Source, events.TypeAuditRecorded, subject, key, data)
}

// maxAuditedPath bounds the path and the target an audit record holds.
const maxAuditedPath = 2 << 10

// target names the object of a call from its path: "kind/namespace/name".
func target(r *http.Request) string {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if ns == "" || name == "" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/clusters/"), "/")
	if len(parts) < 2 {
		return ""
	}
	// Escaped as in a URL: the audit records it, and a path may carry any
	// byte, control characters included.
	return url.PathEscape(parts[1]) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
}

func hubURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// invalid is a 400 naming one field.
func invalid(field, reason string) *apiError {
	return &apiError{status: http.StatusBadRequest, body: api.Error{Error: field + ": " + reason,
		Fields: []api.FieldError{{Field: field, Reason: reason}}}}
}

// ifMatch returns the generation the If-Match header expects, if any: a
// whole number of at most maxGenerationDigits digits, bare or in one pair
// of quotes. A header present but empty is a 400, never taken as absent.
func ifMatch(r *http.Request) (*int64, error) {
	vs, ok := r.Header[http.CanonicalHeaderKey(api.HeaderIfMatch)]
	if !ok {
		return nil, nil
	}
	raw := strings.Join(vs, ",")
	v := raw
	if q, ok := strings.CutPrefix(raw, `"`); ok {
		v, _ = strings.CutSuffix(q, `"`)
		if len(v) == len(q) {
			v = raw // an opening quote without its closing one
		}
	}
	if v == "" || len(v) > maxGenerationDigits || strings.Trim(v, "0123456789") != "" {
		return nil, invalid(api.HeaderIfMatch, fmt.Sprintf("%q: want a generation, a whole number ≥ 0 of at most %d digits, bare or in quotes", raw, maxGenerationDigits))
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, invalid(api.HeaderIfMatch, fmt.Sprintf("%q: %v", raw, err))
	}
	return &g, nil
}

// maxGenerationDigits bounds the generation If-Match names, as the
// pattern in openapi.yaml does: 18 digits always fit an int64.
const maxGenerationDigits = 18

// checkQuery refuses a query parameter the route does not take, or one
// given twice: a misspelt ?dryrun=true, or ?dryRun=false&dryRun=true,
// must not be a write that was meant as a dry run. The read API checks
// its own routes' parameters.
func checkQuery(r *http.Request, rt route) error {
	if rt.serve == nil {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return failf(http.StatusBadRequest, "the query is not a URL query: %v", clip(err.Error(), maxEchoedField))
	}
	takes := rt.params
	if rt.method != http.MethodGet {
		takes = append(slices.Clone(takes), "dryRun")
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(takes, name):
			return invalid(clip(name, maxEchoedField), fmt.Sprintf("not a parameter of %s %s (it takes %s)", rt.method, rt.path, paramList(takes)))
		case len(q[name]) > 1:
			return invalid(name, "given more than once: give it once")
		}
	}
	return nil
}

func paramList(ps []string) string {
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}

// boolParam reads a boolean query parameter: absent is def, and anything
// strconv.ParseBool does not take, the empty value included, is a 400,
// never a guess.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	vs, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	v := vs[0]
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid(name, fmt.Sprintf("%q: want true or false", v))
	}
	return b, nil
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := s.classify(r.Context(), err)
	s.writeJSON(r.Context(), w, ae.status, ae.body)
}

func (s *Server) writeJSON(ctx context.Context, w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.o.Log.ErrorContext(ctx, "encoding a hub response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		s.o.Log.DebugContext(ctx, "writing a hub response", "err", err)
	}
}

// traced wraps next in a server span named after the route, continuing the
// caller's trace.
func (s *Server) traced(pattern string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := s.tracer.Start(ctx, pattern, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
