package cmdtest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
)

// Tokens of a FakeHub, by role.
const (
	AdminToken  = "admin-token"
	ViewerToken = "viewer-token"
)

// FakeHub mimics the hub's own API (hub/api) in memory, for the unit
// tests of the commands that call it: objects with generations, dry runs,
// expected generations, idempotency keys, its error bodies and its roles
// (AdminToken writes, ViewerToken only reads, no token is a 401). The
// integration tests run the real hub.
type FakeHub struct {
	// URL is the fake's base URL.
	URL string
	// Read, when set, serves the routes the fake does not: the read API.
	Read http.Handler
	// Fail, when set, sees each request first (n counts them from 1) and
	// answers it itself when it returns true.
	Fail func(w http.ResponseWriter, r *http.Request, n int) bool

	t        testing.TB
	mu       sync.Mutex
	requests []Request
	objects  map[string]*api.Object
	replies  map[string]*api.Result
	offset   int64
}

// Request is a request the fake received.
type Request struct {
	Method, Path string
	Query        string
	Header       http.Header
	Body         string
}

// NewFakeHub starts a fake hub until the test ends, holding objs.
func NewFakeHub(t testing.TB, objs ...api.Object) *FakeHub {
	t.Helper()
	h := &FakeHub{t: t, objects: map[string]*api.Object{}, replies: map[string]*api.Result{}}
	for _, o := range objs {
		o.Offset = h.offset
		h.offset++
		h.objects[objectKey(o.Kind, o.Cluster, o.Namespace, o.Name)] = &o
	}
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// Requests returns the requests the fake received, in order.
func (h *FakeHub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// Objects returns the objects the fake holds, in key order.
func (h *FakeHub) Objects() []api.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []api.Object
	for _, k := range slices.Sorted(maps.Keys(h.objects)) {
		out = append(out, *h.objects[k])
	}
	return out
}

func objectKey(kind, cluster, namespace, name string) string {
	if kind == api.KindClusters {
		return cluster
	}
	return strings.Join([]string{cluster, kind, namespace, name}, "/")
}

// fail is an error answer of the fake.
type fail struct {
	status int
	body   api.Error
}

func (h *FakeHub) serve(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.requests = append(h.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(b)})
	n := len(h.requests)
	h.mu.Unlock()
	if h.Fail != nil && h.Fail(w, r, n) {
		return
	}
	write := r.Method != http.MethodGet
	switch r.Header.Get("Authorization") {
	case "Bearer " + AdminToken:
	case "Bearer " + ViewerToken:
		if write {
			Answer(h.t, w, http.StatusForbidden, api.Error{Error: "denied: viewer may not write: role viewer, and it needs admin"})
			return
		}
	default:
		Answer(h.t, w, http.StatusUnauthorized, api.Error{Error: "unauthenticated: the token is not one this hub accepts",
			Hint: "argosy login " + h.URL + " --token …"})
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, f := h.route(r, b)
	if f != nil {
		Answer(h.t, w, f.status, f.body)
		return
	}
	if v == nil {
		if h.Read != nil {
			h.Read.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	Answer(h.t, w, http.StatusOK, v)
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

// route serves one request, under h.mu; nil and nil for a route the fake
// does not know.
func (h *FakeHub) route(r *http.Request, body []byte) (any, *fail) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/objects":
		return h.list(r.URL.Query().Get("cluster"), r.URL.Query().Get("kind")), nil
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/whoami":
		return api.Identity{Actor: "tester", Role: "admin"}, nil
	case parts[0] == "clusters" && len(parts) == 2 && r.Method == http.MethodPut:
		return h.register(r, parts[1], body)
	case parts[0] == "clusters" && len(parts) == 2 && r.Method == http.MethodDelete:
		return h.remove(r, api.KindClusters, parts[1], "", parts[1])
	case len(parts) == 1 && r.Method == http.MethodPost && (parts[0] == api.KindApplications || parts[0] == api.KindAppProjects):
		return h.apply(r, parts[0], body)
	case parts[0] == "clusters" && len(parts) == 5 && r.Method == http.MethodDelete:
		return h.remove(r, parts[2], parts[1], parts[3], parts[4])
	case parts[0] == "clusters" && len(parts) == 5 && r.Method == http.MethodPut && parts[2] == api.KindRepositories:
		return h.putRepository(r, parts[1], parts[3], parts[4], body)
	case parts[0] == "clusters" && len(parts) == 6 && r.Method == http.MethodPost && parts[5] == "operations":
		return h.operate(r, parts[1], parts[3], parts[4], body)
	}
	return nil, nil
}

func (h *FakeHub) list(cluster, kind string) api.ObjectList {
	out := api.ObjectList{Items: []api.Object{}}
	for _, k := range slices.Sorted(maps.Keys(h.objects)) {
		o := h.objects[k]
		if (cluster == "" || o.Cluster == cluster) && (kind == "" || o.Kind == kind) {
			out.Items = append(out.Items, *o)
		}
	}
	return out
}

// cluster returns a registered cluster, or the hub's 404.
func (h *FakeHub) cluster(name, field string) *fail {
	if o, ok := h.objects[name]; ok && !o.Deleted {
		return nil
	}
	return &fail{http.StatusNotFound, api.Error{Error: fmt.Sprintf("cluster %q is not registered", name),
		Fields: []api.FieldError{{Field: field, Reason: "no such cluster"}},
		Hint:   "argosy cluster register " + name + " --labels …, or argosy cluster list"}}
}

// generation checks an expected generation and returns the next one, as
// the hub does.
func (h *FakeHub) generation(key string, expected *int64, what string) (int64, *fail) {
	at := int64(0)
	if o, ok := h.objects[key]; ok && !o.Deleted {
		at = o.Generation
	}
	if expected != nil && *expected != at {
		msg := fmt.Sprintf("%s is at generation %d, not %d: it changed since you read it", what, at, *expected)
		if *expected == 0 {
			msg = fmt.Sprintf("%s already exists (generation %d)", what, at)
		}
		return 0, &fail{http.StatusConflict, api.Error{Error: msg, Generation: &at,
			Hint: "read its generation again (argosy app list, argosy cluster list), then retry"}}
	}
	if o, ok := h.objects[key]; ok {
		return o.Generation + 1, nil
	}
	return 1, nil
}

// commit records the events of a write (or, for a dry run, only lists
// them) and answers; a key seen before answers what it wrote.
func (h *FakeHub) commit(r *http.Request, ws []api.Written, objs []*api.Object) (any, *fail) {
	if r.URL.Query().Get("dryRun") == "true" {
		return &api.Result{Events: ws, DryRun: true}, nil
	}
	for i := range ws {
		off := h.offset
		h.offset++
		ws[i].ID = fmt.Sprintf("event-%d", off)
		ws[i].Offset = &off
		if objs[i] != nil {
			objs[i].EventID, objs[i].Offset = ws[i].ID, off
			h.objects[objectKey(objs[i].Kind, objs[i].Cluster, objs[i].Namespace, objs[i].Name)] = objs[i]
		}
	}
	res := &api.Result{Events: ws}
	if k := r.Header.Get(api.HeaderIdempotencyKey); k != "" {
		h.replies[k] = res
	}
	return res, nil
}

// replay answers a repeated idempotency key with what it wrote.
func (h *FakeHub) replay(r *http.Request) *api.Result {
	res, ok := h.replies[r.Header.Get(api.HeaderIdempotencyKey)]
	if !ok || r.URL.Query().Get("dryRun") == "true" {
		return nil
	}
	return &api.Result{Events: res.Events, Replayed: true}
}

func decode(body []byte, v any) *fail {
	if err := json.Unmarshal(body, v); err != nil {
		return &fail{http.StatusBadRequest, api.Error{Error: "the body is not JSON: " + err.Error()}}
	}
	return nil
}

func ifMatch(r *http.Request) *int64 {
	v := strings.Trim(r.Header.Get(api.HeaderIfMatch), `"`)
	if v == "" {
		return nil
	}
	g, _ := strconv.ParseInt(v, 10, 64)
	return &g
}

func (h *FakeHub) register(r *http.Request, name string, body []byte) (any, *fail) {
	if res := h.replay(r); res != nil {
		return res, nil
	}
	var req api.ClusterRequest
	if f := decode(body, &req); f != nil {
		return nil, f
	}
	gen, f := h.generation(name, req.ExpectedGeneration, "cluster "+name)
	if f != nil {
		return nil, f
	}
	// Like the hub: a change that names no partition keeps the pin, and a
	// registration without keys gets a join token.
	pin := req.Partition
	cur, ok := h.objects[name]
	if pin == nil && ok && !cur.Deleted {
		pin = cur.Pin
	}
	p := int32(0)
	if pin != nil {
		p = *pin
	}
	obj := &api.Object{Cluster: name, Kind: api.KindClusters, Name: name, Generation: gen, Labels: req.Labels, Partition: p, Pin: pin}
	res, f := h.commit(r, []api.Written{{Type: "io.argosy.config.cluster.registered.v1", Cluster: name, Kind: api.KindClusters,
		Name: name, Generation: gen, Partition: p}}, []*api.Object{obj})
	if result, isResult := res.(*api.Result); f == nil && isResult && req.SigningKey == "" && (!ok || cur.Deleted) {
		expires := time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)
		result.JoinToken, result.JoinTokenExpiresAt = "argosy_join_test", &expires
	}
	return res, f
}

func (h *FakeHub) remove(r *http.Request, kind, cluster, namespace, name string) (any, *fail) {
	if res := h.replay(r); res != nil {
		return res, nil
	}
	if f := h.cluster(cluster, "cluster"); f != nil {
		return nil, f
	}
	key := objectKey(kind, cluster, namespace, name)
	cur, ok := h.objects[key]
	if !ok || cur.Deleted {
		return nil, &fail{http.StatusNotFound, api.Error{Error: fmt.Sprintf("no %s %s/%s on cluster %q", strings.TrimSuffix(kind, "s"), namespace, name, cluster)}}
	}
	gen, f := h.generation(key, ifMatch(r), kind+" "+name)
	if f != nil {
		return nil, f
	}
	obj := *cur
	obj.Generation, obj.Deleted = gen, true
	typ := map[string]string{api.KindClusters: "cluster.deregistered", api.KindApplications: "application.deleted",
		api.KindAppProjects: "appproject.deleted", api.KindRepositories: "repository.deleted"}[kind]
	return h.commit(r, []api.Written{{Type: "io.argosy.config." + typ + ".v1", Cluster: cluster, Kind: kind, Namespace: namespace,
		Name: name, Generation: gen}}, []*api.Object{&obj})
}

func (h *FakeHub) apply(r *http.Request, kind string, body []byte) (any, *fail) {
	if res := h.replay(r); res != nil {
		return res, nil
	}
	var req api.ApplyRequest
	if f := decode(body, &req); f != nil {
		return nil, f
	}
	var m struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
		Spec     struct{ Project string }         `json:"spec"`
	}
	if f := decode(req.Manifest, &m); f != nil {
		return nil, f
	}
	if m.Metadata.Name == "" {
		return nil, &fail{http.StatusBadRequest, api.Error{Error: "manifest: invalid", Fields: []api.FieldError{
			{Field: "manifest.metadata.name", Reason: "required"}, {Field: "manifest.spec", Reason: "required"}}}}
	}
	var ws []api.Written
	var objs []*api.Object
	for i, c := range req.Clusters {
		if f := h.cluster(c, fmt.Sprintf("clusters[%d]", i)); f != nil {
			return nil, f
		}
		key := objectKey(kind, c, m.Metadata.Namespace, m.Metadata.Name)
		gen, f := h.generation(key, req.ExpectedGeneration, kind+" "+m.Metadata.Name)
		if f != nil {
			return nil, f
		}
		typ := map[string]string{api.KindApplications: "application", api.KindAppProjects: "appproject"}[kind]
		ws = append(ws, api.Written{Type: "io.argosy.config." + typ + ".upserted.v1", Cluster: c, Kind: kind,
			Namespace: m.Metadata.Namespace, Name: m.Metadata.Name, Generation: gen})
		project := m.Spec.Project
		if kind == api.KindAppProjects {
			project = ""
		}
		objs = append(objs, &api.Object{Cluster: c, Kind: kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name,
			Generation: gen, Project: project})
	}
	return h.commit(r, ws, objs)
}

func (h *FakeHub) putRepository(r *http.Request, cluster, namespace, name string, body []byte) (any, *fail) {
	if res := h.replay(r); res != nil {
		return res, nil
	}
	if f := h.cluster(cluster, "cluster"); f != nil {
		return nil, f
	}
	var req api.RepositoryRequest
	if f := decode(body, &req); f != nil {
		return nil, f
	}
	if req.URL == "" {
		return nil, &fail{http.StatusBadRequest, api.Error{Error: "url: required: the repository's URL",
			Fields: []api.FieldError{{Field: "url", Reason: "required: the repository's URL"}}}}
	}
	key := objectKey(api.KindRepositories, cluster, namespace, name)
	gen, f := h.generation(key, req.ExpectedGeneration, "repository "+name)
	if f != nil {
		return nil, f
	}
	obj := &api.Object{Cluster: cluster, Kind: api.KindRepositories, Namespace: namespace, Name: name, Generation: gen, Project: req.Project, URL: req.URL}
	return h.commit(r, []api.Written{{Type: "io.argosy.config.repository.upserted.v1", Cluster: cluster, Kind: api.KindRepositories,
		Namespace: namespace, Name: name, Generation: gen}}, []*api.Object{obj})
}

func (h *FakeHub) operate(r *http.Request, cluster, namespace, name string, body []byte) (any, *fail) {
	if res := h.replay(r); res != nil {
		return res, nil
	}
	if f := h.cluster(cluster, "cluster"); f != nil {
		return nil, f
	}
	cur, ok := h.objects[objectKey(api.KindApplications, cluster, namespace, name)]
	if !ok || cur.Deleted {
		return nil, &fail{http.StatusNotFound, api.Error{Error: fmt.Sprintf("no application %s/%s on cluster %q", namespace, name, cluster),
			Hint: "argosy app list --cluster " + cluster}}
	}
	var req api.OperationRequest
	if f := decode(body, &req); f != nil {
		return nil, f
	}
	return h.commit(r, []api.Written{{Type: "io.argosy.config.operation.requested.v1", Cluster: cluster, Kind: api.KindApplications,
		Namespace: namespace, Name: name, Generation: cur.Generation}}, []*api.Object{nil})
}
