package cmdtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/spoke"
)

// HubPartitions is how many partitions the topics of a StartHub hub have.
const HubPartitions = 4

// Hub is a real hub (hub.Server) on franz-go's in-memory broker, the one
// hub/hubtest runs, for the unit tests of the commands that call it. The
// commands reach it through a small recording middleware: Requests lists
// what they sent, and Fail may answer a request itself (a fault the real
// hub does not give on cue).
type Hub struct {
	// URL is the middleware's base URL, which the commands are given.
	URL string
	// Admin and Viewer are tokens of the hub, with those roles.
	Admin, Viewer string
	// Client is a client of the hub itself, past the middleware, with the
	// admin token: for setting a test up and reading what the hub holds.
	Client *api.Client

	t        testing.TB
	mu       sync.Mutex
	requests []Request
	fail     func(w http.ResponseWriter, r *http.Request, n int) bool
	proxy    *httputil.ReverseProxy
}

// Request is a request the middleware passed on or failed.
type Request struct {
	Method, Path string
	Query        string
	Header       http.Header
	Body         string
}

// StartHub starts a real hub on an in-memory broker (hubtest.Start, with
// HubPartitions partitions and opts: hub.WithReadAPI, say) behind the
// recording middleware, and returns once it is ready.
func StartHub(t testing.TB, opts ...hub.Option) *Hub {
	t.Helper()
	rig := hubtest.Start(t, HubPartitions, nil, opts...)
	target, err := url.Parse(rig.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := &Hub{t: t, Admin: rig.Admin, Viewer: rig.Viewer, Client: rig.Client, proxy: httputil.NewSingleHostReverseProxy(target)}
	// A connection each request: a request the middleware hangs up on is
	// then one the client's transport does not resend by itself.
	front := httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	front.Config.SetKeepAlivesEnabled(false)
	front.Start()
	t.Cleanup(front.Close)
	h.URL = front.URL
	return h
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	h.mu.Lock()
	h.requests = append(h.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(b)})
	n, fail := len(h.requests), h.fail
	h.mu.Unlock()
	if fail != nil && fail(w, r, n) {
		return
	}
	h.proxy.ServeHTTP(w, r)
}

// Fail makes f see each request first (n counts them from 1, from the
// first the middleware received) and answer it itself, the hub never
// seeing it, when it returns true; nil ends that.
func (h *Hub) Fail(f func(w http.ResponseWriter, r *http.Request, n int) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail = f
}

// Requests returns the requests the middleware received, in order.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// Objects returns the objects the hub holds, deleted ones included, as
// GET /api/v1/objects lists them.
func (h *Hub) Objects() []api.Object {
	h.t.Helper()
	objs, err := h.Client.Objects(h.t.Context(), "", "")
	if err != nil {
		h.t.Fatal(err)
	}
	return objs
}

// Register registers clusters, each with labels and no keys.
func (h *Hub) Register(labels map[string]string, clusters ...string) {
	h.t.Helper()
	for _, c := range clusters {
		if _, err := h.Client.RegisterCluster(h.t.Context(), c, api.ClusterRequest{Labels: labels}, api.WriteOptions{}); err != nil {
			h.t.Fatalf("registering cluster %s: %v", c, err)
		}
	}
}

// RegisterWithKeys registers cluster with new keys of its own, as
// argosy-spoke keygen makes them, so that credentials can be sealed to
// it.
func (h *Hub) RegisterWithKeys(cluster string) {
	h.t.Helper()
	k, err := spoke.GenerateKeys()
	if err != nil {
		h.t.Fatal(err)
	}
	pub := k.Public(cluster)
	req := api.ClusterRequest{SigningKey: pub[0].PublicKey, SealingKey: pub[1].PublicKey}
	if _, err := h.Client.RegisterCluster(h.t.Context(), cluster, req, api.WriteOptions{}); err != nil {
		h.t.Fatalf("registering cluster %s: %v", cluster, err)
	}
}

// Object returns the object the hub holds of kind on cluster, by
// namespace and name, deleted or not.
func (h *Hub) Object(kind, cluster, namespace, name string) api.Object {
	h.t.Helper()
	for _, o := range h.Objects() {
		if o.Kind == kind && o.Cluster == cluster && o.Namespace == namespace && o.Name == name {
			return o
		}
	}
	h.t.Fatalf("the hub holds no %s %s/%s on %s", kind, namespace, name, cluster)
	return api.Object{}
}

// Apply applies manifest, an object of kind (api.KindApplications or
// api.KindAppProjects) as JSON, to clusters, and returns what was written.
func (h *Hub) Apply(kind, manifest string, clusters ...string) *api.Result {
	h.t.Helper()
	res, err := h.Client.Apply(h.t.Context(), kind, api.ApplyRequest{Clusters: clusters, Manifest: json.RawMessage(manifest)}, api.WriteOptions{})
	if err != nil {
		h.t.Fatalf("applying %s to %v: %v", manifest, clusters, err)
	}
	return res
}

// AppManifest returns an Application the hub accepts, as JSON: name in
// argocd, of project, from a git repository to the cluster it runs on.
func AppManifest(name, project string) string {
	return `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"` + name + `","namespace":"argocd"},` +
		`"spec":{"project":"` + project + `","source":{"repoURL":"https://git.example/apps.git","path":"web","targetRevision":"main"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`
}

// ProjectManifest returns an AppProject the hub accepts, as JSON: name
// in argocd, of any repository, to any destination.
func ProjectManifest(name string) string {
	return `{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"` + name + `","namespace":"argocd"},` +
		`"spec":{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}]}}`
}

// Answer answers a request as the hub does: status, and v as JSON.
func Answer(t testing.TB, w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Errorf("encoding an answer: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		t.Errorf("answering: %v", err)
	}
}
