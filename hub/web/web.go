package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Viewer is who is looking, as the hub authenticated them.
type Viewer struct {
	Actor, Role string
	// CanWrite is set for roles that may operate Applications: the page
	// shows write buttons only to them (the API decides either way).
	CanWrite bool
	// CSRF is the value the page's API calls carry in the X-Argosy-CSRF
	// header, which the hub checks against the session cookie.
	CSRF string
}

type viewerKey struct{}

// WithViewer returns ctx carrying v, for ServeHTTP.
func WithViewer(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

func viewerOf(ctx context.Context) (Viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(Viewer)
	return v, ok
}

// placementsKey is the context key of WithPlacementsVersion's function.
type placementsKey struct{}

// WithPlacementsVersion returns ctx with the function that versions the
// placements list its viewer reads (the hub's, which holds them): the
// placements page shows the version as a live region, and reloads its
// list when the version changes.
func WithPlacementsVersion(ctx context.Context, version func() string) context.Context {
	return context.WithValue(ctx, placementsKey{}, version)
}

func placementsVersionOf(ctx context.Context) string {
	if f, ok := ctx.Value(placementsKey{}).(func() string); ok {
		return f()
	}
	return ""
}

// placementsData is the placements page's: the version of its list.
type placementsData struct{ Version string }

// Handler serves the dashboard's pages.
type Handler struct {
	q          projector.Query
	heartbeat  time.Duration
	summaryTTL time.Duration
	liveEvery  time.Duration
	now        func() time.Time
	// o holds the logger (WithLogger) and its default.
	o     events.Common
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// Option configures a Handler.
type Option func(*Handler)

// WithHeartbeatInterval sets the spokes' heartbeat interval (default 30s):
// a cluster is Stale once its last heartbeat is three intervals old.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.heartbeat = d
		}
	}
}

// WithClock sets the clock freshness is judged by (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(h *Handler) {
		if now != nil {
			h.now = now
		}
	}
}

// WithLiveInterval sets how often a live stream renders its page again
// (default 1s).
func WithLiveInterval(d time.Duration) Option { return func(h *Handler) { h.liveEvery = d } }

// WithLogger sets where failed pages are logged (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.o.Log = l } }

// WithSummaryTTL sets how long the clusters' summaries, which the fleet
// and Application pages filter, are kept between reads (default
// read.DefaultSummaryTTL; 0 reads them for every page).
func WithSummaryTTL(d time.Duration) Option {
	return func(h *Handler) { h.summaryTTL = max(d, 0) }
}

// New returns the dashboard over q.
func New(q projector.Query, opts ...Option) (*Handler, error) {
	h := &Handler{q: q, heartbeat: read.DefaultHeartbeatInterval, now: time.Now, summaryTTL: read.DefaultSummaryTTL, liveEvery: liveEvery,
		pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	h.o.SetDefaults()
	if h.summaryTTL > 0 {
		h.q = read.NewSummaryCache(q, h.summaryTTL, h.now)
	}
	// Each page shows only what the viewer's scope holds (read.WithScope).
	h.q = read.Scoped(h.q)
	for _, name := range []string{"fleet", "cluster", "apps", "app", "tree", "livediff", "audit", "reports", "placements", "login", "error", "verify"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", name, err)
		}
		h.pages[name] = t
	}
	h.mux.HandleFunc("GET /{$}", h.page(h.fleet))
	h.mux.HandleFunc("GET /clusters/{name}", h.page(h.cluster))
	h.mux.HandleFunc("GET /apps", h.page(h.apps))
	h.mux.HandleFunc("GET /apps/{namespace}/{name}", h.page(h.app))
	h.mux.HandleFunc("GET /apps/{namespace}/{name}/tree", h.page(h.tree))
	h.mux.HandleFunc("GET /apps/{namespace}/{name}/diff", h.page(h.liveDiff))
	h.mux.HandleFunc("GET /audit", h.page(h.audit))
	h.mux.HandleFunc("GET /audit/verify", h.verify)
	h.mux.HandleFunc("GET /live", h.live)
	h.mux.HandleFunc("GET /reports", h.page(h.reports))
	// The placements page is a shell: its script reads and writes the
	// placements through the hub's API as the signed-in user.
	h.mux.HandleFunc("GET /placements", h.page(func(r *http.Request) (string, any, error) {
		return "placements", placementsData{Version: placementsVersionOf(r.Context())}, nil
	}))
	h.mux.HandleFunc("GET /reports/deployments.csv", h.reportDownload("csv"))
	h.mux.HandleFunc("GET /reports/deployments.json", h.reportDownload("json"))
	h.mux.HandleFunc("/", h.page(func(*http.Request) (string, any, error) {
		return "", nil, &pageError{status: http.StatusNotFound, msg: "no such page"}
	}))
	return h, nil
}

// Static serves the embedded assets (CSS, scripts); they hold nothing
// secret, so the hub serves them without authentication.
func Static() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree has a static directory; a build without one is broken
	}
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsrv.ServeHTTP(w, r)
	})
}

// ServeHTTP serves a page to the Viewer in the request's context.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// LoginPage writes the login page, with a message if the last try failed,
// and the OIDC login's button when oidc is set.
func (h *Handler) LoginPage(w http.ResponseWriter, r *http.Request, status int, next, msg string, oidc bool) {
	h.render(w, r, status, "login", map[string]any{"Next": next, "Error": msg, "OIDC": oidc})
}

// pageError is an error the viewer should read as it is.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func badRequest(err error) error {
	return &pageError{status: http.StatusBadRequest, msg: err.Error()}
}

// page adapts a page function: it returns the template, its data or an
// error.
func (h *Handler) page(f func(*http.Request) (string, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, data, err := f(r)
		if err != nil {
			status, msg := http.StatusInternalServerError, "internal error: see the hub's log"
			var pe *pageError
			if errors.As(err, &pe) {
				status, msg = pe.status, pe.msg
			} else if s, m, ok := readError(err); ok {
				status, msg = s, m
			} else {
				h.o.Log.ErrorContext(r.Context(), "dashboard page failed", "path", r.URL.Path, "err", err)
			}
			h.render(w, r, status, "error", map[string]any{"Status": status, "Message": msg})
			return
		}
		h.render(w, r, http.StatusOK, name, data)
	}
}

// render executes a page into a buffer, so that a failing template is a
// 500 rather than half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v, _ := viewerOf(r.Context())
	var buf bytes.Buffer
	err := h.pages[name].Execute(&buf, map[string]any{"Viewer": v, "Page": name, "Data": data, "Now": h.now().UTC(), "Path": r.URL.Path})
	if err != nil {
		h.o.Log.ErrorContext(r.Context(), "rendering a dashboard page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	page := buf.Bytes()
	if bytes.Contains(page, []byte("data-live")) && !forStream(r.Context()) {
		if page, err = withVersions(page); err != nil {
			h.o.Log.ErrorContext(r.Context(), "versioning a dashboard page's live regions", "page", name, "err", err)
			http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(status)
	if _, err := w.Write(page); err != nil {
		h.o.Log.DebugContext(r.Context(), "writing a dashboard page", "err", err)
	}
}

// renderFragment executes a template's "fragment" alone, for htmx.
func (h *Handler) renderFragment(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "fragment", data); err != nil {
		h.o.Log.ErrorContext(r.Context(), "rendering a dashboard fragment", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := w.Write(buf.Bytes()); err != nil {
		h.o.Log.DebugContext(r.Context(), "writing a dashboard fragment", "err", err)
	}
}
