package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/httpserve"
)

// Inspector asks a cluster live questions through the hub (hub/api's
// Client).
type Inspector interface {
	Tree(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*api.LiveAnswer, error)
	Diff(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*api.LiveAnswer, error)
	Manifest(ctx context.Context, cluster, namespace, name string, t api.LiveTarget, timeout time.Duration) (*api.LiveAnswer, error)
}

// UIProxy stands in front of the mirror cluster's Argo CD API server, for
// its UI: it passes every call on, and answers itself the calls about a
// mirrored Application that the API server answers from its controller's
// cache, which the skip-reconcile annotation leaves empty (the call would
// wait until it times out): the resource tree, its stream, the managed
// resources (the diff view) and one resource's live manifest. Those it
// asks of the Application's cluster through the hub's live questions,
// with the mirror's token, and answers in Argo CD's JSON shapes.
//
// A change to one of a mirrored Application's resources (a delete, a
// patch, a resource action) is refused: the API server would make it in
// the mirror cluster, which the Application names as its destination.
//
// Before it asks, it makes the API server's own GET of the Application
// with the caller's credentials (its cookie and Authorization header): an
// Application Argo CD would not show the caller is not shown, and nothing
// is asked. The Application it gets names its cluster (argosy.dev/cluster)
// and its namespace there (argosy.dev/namespace); one that is not
// mirrored is left to the API server.
type UIProxy struct {
	argocd *url.URL
	client *http.Client
	hub    Inspector
	rp     *httputil.ReverseProxy
	log    *slog.Logger
	// every is how often the tree's stream asks again.
	every time.Duration
}

// NewUIProxy returns a proxy of the Argo CD API server at argocd, reached
// with client (nil: http.DefaultClient), that asks hub its live questions.
func NewUIProxy(argocd string, client *http.Client, hub Inspector, log *slog.Logger) (*UIProxy, error) {
	u, err := url.Parse(argocd)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mirror UI proxy: Argo CD's API server %q: want an http or https URL", argocd)
	}
	if hub == nil {
		return nil, errors.New("mirror UI proxy: a hub is required")
	}
	if client == nil {
		client = http.DefaultClient
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = client.Transport
	rp.FlushInterval = -1 // the API server streams (watches, logs)
	return &UIProxy{argocd: u, client: client, hub: hub, rp: rp, log: log, every: 10 * time.Second}, nil
}

// liveTimeout bounds one question of the proxy to its cluster.
const liveTimeout = 10 * time.Second

// ServeHTTP answers the live calls about a mirrored Application and
// passes every other call on.
func (p *UIProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, what, stream := liveCall(r)
	if what == "" {
		p.rp.ServeHTTP(w, r)
		return
	}
	app, status, body, err := p.application(r, name)
	switch {
	case err != nil:
		writeArgoError(w, http.StatusBadGateway, fmt.Sprintf("Argo CD's API server: %v", err))
		return
	case status != http.StatusOK:
		// What Argo CD refuses the caller, or does not have: its answer.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	cluster, ns := app.Metadata.Labels[LabelCluster], app.Metadata.Annotations[AnnotationNamespace]
	if app.Metadata.Labels[LabelManagedBy] != FieldManager || cluster == "" || ns == "" {
		p.rp.ServeHTTP(w, r) // not a mirrored Application: the controller's
		return
	}
	if what == "change" {
		writeArgoError(w, http.StatusForbidden, fmt.Sprintf("%s mirrors an Application of cluster %s: its resources change on that cluster, "+
			"through Argosy (argosy app sync|rollback|delete --cluster %s), not here", name, cluster, cluster))
		return
	}
	if stream {
		p.streamTree(w, r, cluster, ns, name)
		return
	}
	out, err := p.answer(r, what, cluster, ns, name)
	if err != nil {
		p.hubError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out) // the client is gone, or has it all
}

// liveCall reads which of the calls the proxy answers r is: the
// Application's name, "tree", "diff" or "manifest", and whether it is the
// tree's stream.
func liveCall(r *http.Request) (name, what string, stream bool) {
	if r.Method != http.MethodGet {
		// A change to one resource (delete, patch, an action): the API
		// server would make it in the mirror cluster, the mirrored
		// Application's destination as it reads it.
		if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/applications/"); ok {
			if n, call, ok := strings.Cut(rest, "/"); ok && n != "" && (call == "resource" || strings.HasPrefix(call, "resource/")) {
				return n, "change", false
			}
		}
		return "", "", false
	}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/api/v1/stream/applications/"); ok {
		if n, ok := strings.CutSuffix(rest, "/resource-tree"); ok && n != "" && !strings.Contains(n, "/") {
			return n, "tree", true
		}
		return "", "", false
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/applications/")
	if !ok {
		return "", "", false
	}
	n, call, ok := strings.Cut(rest, "/")
	if !ok || n == "" {
		return "", "", false
	}
	switch call {
	case "resource-tree":
		return n, "tree", false
	case "managed-resources":
		return n, "diff", false
	case "resource":
		return n, "manifest", false
	}
	return "", "", false
}

// mirroredApp is what the proxy reads of an Application.
type mirroredApp struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// maxApplication bounds the Application the API server answers with.
const maxApplication = 8 << 20

// application gets the Application name of r's appNamespace from the API
// server, with r's credentials: its status and body when it is not 200.
func (p *UIProxy) application(r *http.Request, name string) (*mirroredApp, int, []byte, error) {
	u := *p.argocd
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/applications/" + url.PathEscape(name)
	q := url.Values{}
	if ns := r.URL.Query().Get("appNamespace"); ns != "" {
		q.Set("appNamespace", ns)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, nil, err
	}
	for _, h := range []string{"Authorization", "Cookie"} {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxApplication))
	if err != nil {
		return nil, 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, body, nil
	}
	var app mirroredApp
	if err := json.Unmarshal(body, &app); err != nil {
		return nil, 0, nil, fmt.Errorf("the Application does not decode: %w", err)
	}
	return &app, http.StatusOK, nil, nil
}

// answer asks the cluster what r asks, and returns it in Argo CD's shape.
func (p *UIProxy) answer(r *http.Request, what, cluster, ns, name string) (any, error) {
	ctx := r.Context()
	switch what {
	case "tree":
		a, err := p.hub.Tree(ctx, cluster, ns, name, liveTimeout)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	case "diff":
		a, err := p.hub.Diff(ctx, cluster, ns, name, liveTimeout)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	}
	q := r.URL.Query()
	t := api.LiveTarget{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"), Namespace: q.Get("namespace"),
		Name: q.Get("resourceName")}
	a, err := p.hub.Manifest(ctx, cluster, ns, name, t, liveTimeout)
	if err != nil {
		return nil, err
	}
	// Argo CD's ApplicationResourceResponse: the manifest as a string.
	return map[string]string{"manifest": string(a.Answer)}, nil
}

// streamTree answers the tree's stream as the API server does, with
// server-sent events of {"result": tree}: one now, and one every p.every
// until the caller goes or the server shuts down. A question that fails ends the stream with an
// error event.
func (p *UIProxy) streamTree(w http.ResponseWriter, r *http.Request, cluster, ns, name string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeArgoError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		a, err := p.hub.Tree(r.Context(), cluster, ns, name, liveTimeout)
		if err != nil {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error()}})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			flusher.Flush()
			return
		}
		if _, err := fmt.Fprintf(w, "data: {\"result\":%s}\n\n", a.Answer); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-httpserve.Stopping(r.Context()): // the server is shutting down
			return
		case <-t.C:
		}
	}
}

// hubError answers with the hub's refusal, or its failure, as Argo CD's
// API server writes errors.
func (p *UIProxy) hubError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusBadGateway, err.Error()
	var re *api.ResponseError
	if errors.As(err, &re) {
		status, msg = re.Status, re.Body.Error
	}
	p.log.InfoContext(r.Context(), "mirror UI proxy: a live question failed", "path", r.URL.Path, "err", err)
	writeArgoError(w, status, msg)
}

// writeArgoError writes an error as Argo CD's API server does (grpc-gateway's
// body, whose message its UI shows).
func writeArgoError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "message": msg, "code": grpcCode(status)})
}

// grpcCode is the gRPC code grpc-gateway maps status from.
func grpcCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return 3
	case http.StatusGatewayTimeout:
		return 4
	case http.StatusNotFound:
		return 5
	case http.StatusForbidden:
		return 7
	case http.StatusUnprocessableEntity:
		return 9
	case http.StatusUnauthorized:
		return 16
	case http.StatusServiceUnavailable:
		return 14
	}
	return 13
}
