package mirror

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
)

// fakeInspector answers live questions and records them.
type fakeInspector struct {
	fakeHub // the changes relayed
	mu      sync.Mutex
	asked   []string
	err     error
	// errAfter, if not 0, is how many questions are answered before err
	// is.
	errAfter int
	// tree, if set, is the tree's answer.
	tree string
	// log, if set, is each logs answer, given the number of questions
	// asked before.
	log func(asked int) fakeLog
}

// fakeLog is a logs answer: its lines, whether they begin with their
// time stamps (an agent that does not write them says not), whether the
// agent cut older ones; or the question's failure.
type fakeLog struct {
	lines        []string
	noTimestamps bool
	truncated    bool
	err          error
}

func (f *fakeInspector) note(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, s)
	if f.errAfter > 0 && len(f.asked) <= f.errAfter {
		return nil
	}
	return f.err
}

func (f *fakeInspector) Tree(_ context.Context, cluster, namespace, name string, _ time.Duration) (*api.LiveAnswer, error) {
	tree := `{"nodes":[{"kind":"ConfigMap","name":"demo"}]}`
	if f.tree != "" {
		tree = f.tree
	}
	return &api.LiveAnswer{Answer: json.RawMessage(tree)}, f.note("tree " + cluster + " " + namespace + "/" + name)
}

func (f *fakeInspector) Diff(_ context.Context, cluster, namespace, name string, _ time.Duration) (*api.LiveAnswer, error) {
	return &api.LiveAnswer{Answer: json.RawMessage(`{"items":[{"kind":"ConfigMap","name":"demo"}]}`)},
		f.note("diff " + cluster + " " + namespace + "/" + name)
}

func (f *fakeInspector) Manifest(_ context.Context, cluster, namespace, name string, t api.LiveTarget, _ time.Duration) (*api.LiveAnswer, error) {
	return &api.LiveAnswer{Answer: json.RawMessage(`{"kind":"ConfigMap"}`)},
		f.note("manifest " + cluster + " " + namespace + "/" + name + " " + t.Group + "/" + t.Version + "/" + t.Kind + " " + t.Namespace + "/" + t.Name)
}

func (f *fakeInspector) Logs(_ context.Context, cluster, namespace, name, podNamespace, pod string, o api.LogOptions, _ time.Duration) (*api.LiveAnswer, error) {
	l := fakeLog{lines: []string{"started", "GET /", "GET /health"}, noTimestamps: true}
	if f.log != nil {
		f.mu.Lock()
		l = f.log(len(f.asked))
		f.mu.Unlock()
	}
	b, _ := json.Marshal(map[string]any{"pod": map[string]string{"kind": "Pod", "namespace": "web", "name": pod}, "lines": l.lines,
		"timestamps": o.Timestamps && !l.noTimestamps, "truncated": l.truncated})
	asked := fmt.Sprintf("logs %s %s/%s %s/%s", cluster, namespace, name, podNamespace, pod)
	asked += fmt.Sprintf(" {Container:%s TailLines:%d SinceSeconds:%d Timestamps:%v}", o.Container, o.TailLines, o.SinceSeconds, o.Timestamps)
	if who := o.ActAs; who != nil {
		asked += fmt.Sprintf(" for %s:%s%v", who.Source, who.User, who.Groups)
	}
	if err := f.note(asked); err != nil {
		return nil, err
	}
	return &api.LiveAnswer{Answer: b}, l.err
}

// fakeArgoCD is an Argo CD API server of two Applications in namespace
// fleet-prod, web (mirrored) and own (not), which shows them only to the
// bearer token "ok" and answers its own resource trees as "controller's".
//
// It speaks HTTP/2 in clear text too, and answers a gRPC call itself with
// status OK and a header naming the call and its message's length.
func fakeArgoCD(t *testing.T) *httptest.Server {
	return serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Controller", fmt.Sprintf("%s %s %d", r.Proto, r.URL.Path, len(b)))
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.Header().Set("Grpc-Status", "0")
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tok != "ok" && tok != "viewer" && tok != "anonymous" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":"permission denied","message":"permission denied","code":7}`)
			return
		}
		switch r.URL.Path {
		case "/api/v1/applications/web", "/api/v1/applications/edge":
			owner, name := "hub", strings.TrimPrefix(r.URL.Path, "/api/v1/applications/")
			if name == "edge" {
				owner = "spoke"
			}
			_, _ = io.WriteString(w, `{"metadata":{"name":"`+name+`","namespace":"fleet-prod","labels":{"app.kubernetes.io/managed-by":"argosy-mirror",`+
				`"argosy.dev/cluster":"prod"},"annotations":{"argosy.dev/namespace":"argocd","argosy.dev/owner":"`+owner+`","argosy.dev/generation":"7"}},`+
				`"spec":{"project":"shop"},"status":{"sync":{"status":"Synced"}}}`)
		case "/api/v1/applications/own":
			_, _ = io.WriteString(w, `{"metadata":{"name":"own","namespace":"fleet-prod"}}`)
		case "/api/v1/session/userinfo":
			switch tok {
			case "ok":
				_, _ = io.WriteString(w, `{"loggedIn":true,"username":"alice","groups":["team-a"]}`)
			case "viewer":
				_, _ = io.WriteString(w, `{"loggedIn":true,"username":"carol"}`)
			default:
				_, _ = io.WriteString(w, `{"loggedIn":false}`)
			}
		default:
			if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/account/can-i/"); ok {
				// alice may anything of project shop's Applications in
				// fleet-prod (their logs too); carol nothing.
				v := "no"
				resource, rest, _ := strings.Cut(rest, "/")
				if _, obj, _ := strings.Cut(rest, "/"); tok == "ok" && (resource == "applications" || resource == "logs") && strings.HasPrefix(obj, "shop/fleet-prod/") {
					v = "yes"
				}
				_, _ = io.WriteString(w, `{"value":"`+v+`"}`)
				return
			}
			b, _ := io.ReadAll(r.Body)
			_, _ = fmt.Fprintf(w, `"controller's %s %s%s"`, r.Method, r.URL.Path, b)
		}
	}))
}

// TestUIProxy: the proxy answers a mirrored Application's tree, managed
// resources and live manifest from the cluster, in Argo CD's shapes, once
// the API server showed the caller the Application; it passes on what the
// API server refuses the caller without asking anything, an Application
// that is not mirrored, and every other call; the hub's refusal is the
// answer's status. A change to a mirrored Application's resource is
// refused, and one to another Application's is passed on.
func TestUIProxy(t *testing.T) {
	argo := fakeArgoCD(t)
	// A Deployment's two Pods under its ReplicaSet, and a Pod of another.
	const tree = `{"nodes":[{"kind":"ConfigMap","name":"demo"},{"group":"apps","kind":"Deployment","namespace":"web","name":"web"},` +
		`{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"web-5f","parentRefs":[{"group":"apps","kind":"Deployment","namespace":"web","name":"web"}]},` +
		`{"kind":"Pod","namespace":"web","name":"web-1","parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"web-5f"}]},` +
		`{"kind":"Pod","namespace":"web","name":"web-2","parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"web-5f"}]},` +
		`{"kind":"Pod","namespace":"web","name":"other","parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"api-1"}]}]}`
	hub := &fakeInspector{tree: tree}
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	get := func(path, token string) (int, string) {
		t.Helper()
		status, body := callProxy(t, http.MethodGet, srv.URL+path, token)
		return status, strings.TrimSpace(body)
	}
	for _, tc := range []struct {
		path, token string
		status      int
		body        string
	}{
		{"/api/v1/applications/web/resource-tree?appNamespace=fleet-prod", "ok", 200, tree},
		{"/api/v1/applications/web/managed-resources?appNamespace=fleet-prod", "ok", 200, `{"items":[{"kind":"ConfigMap","name":"demo"}]}`},
		{"/api/v1/applications/web/resource?appNamespace=fleet-prod&namespace=web&resourceName=demo&version=v1&kind=ConfigMap", "ok", 200,
			`{"manifest":"{\"kind\":\"ConfigMap\"}"}`},
		{"/api/v1/applications/web/resource-tree?appNamespace=fleet-prod", "stolen", 403, `{"error":"permission denied","message":"permission denied","code":7}`},
		{"/api/v1/applications/own/resource-tree?appNamespace=fleet-prod", "ok", 200, `"controller's GET /api/v1/applications/own/resource-tree"`},
		{"/api/v1/applications?appNamespace=fleet-prod", "ok", 200, `"controller's GET /api/v1/applications"`},
		// What the API server answers only from its controller's cache:
		// none, for a mirrored Application. Its own events are the API
		// server's.
		{"/api/v1/applications/web/events?appNamespace=fleet-prod&resourceUID=u-1&resourceNamespace=web&resourceName=demo", "ok", 200,
			`{"metadata":{},"items":[]}`},
		{"/api/v1/applications/web/events?appNamespace=fleet-prod", "ok", 200, `"controller's GET /api/v1/applications/web/events"`},
		{"/api/v1/applications/own/events?appNamespace=fleet-prod&resourceUID=u-1&resourceName=demo", "ok", 200,
			`"controller's GET /api/v1/applications/own/events"`},
		{"/api/v1/applications/web/resource/actions?appNamespace=fleet-prod&namespace=web&resourceName=demo&version=v1&kind=ConfigMap", "ok", 200,
			`{"actions":[]}`},
		{"/api/v1/applications/web/resource/links?appNamespace=fleet-prod&namespace=web&resourceName=demo&version=v1&kind=ConfigMap", "ok", 200,
			`{"items":[]}`},
		{"/api/v1/applications/web/resource/links?appNamespace=fleet-prod&resourceName=demo", "stolen", 403,
			`{"error":"permission denied","message":"permission denied","code":7}`},
		// A Pod's logs: the lines the filter keeps, then the last entry, and
		// the stream ends.
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&podName=web-1&container=app&tailLines=10&filter=GET",
			"ok", 200, `data: {"result":{"content":"GET /","podName":"web-1","last":false}}` + "\n\n" +
				`data: {"result":{"content":"GET /health","podName":"web-1","last":false}}` + "\n\n" +
				`data: {"result":{"content":"","podName":"","last":true}}`},
		{"/api/v1/applications/web/pods/web-1/logs?appNamespace=fleet-prod&namespace=web&sinceSeconds=60&filter=!GET", "ok", 200,
			`data: {"result":{"content":"started","podName":"web-1","last":false}}` + "\n\n" +
				`data: {"result":{"content":"","podName":"","last":true}}`},
		// A Deployment's: its Pods' in the tree, Pod after Pod.
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&kind=Deployment&group=apps&resourceName=web&filter=health", "ok", 200,
			`data: {"result":{"content":"GET /health","podName":"web-1","last":false}}` + "\n\n" +
				`data: {"result":{"content":"GET /health","podName":"web-2","last":false}}` + "\n\n" +
				`data: {"result":{"content":"","podName":"","last":true}}`},
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&kind=Deployment&group=apps&resourceName=api", "ok", 404,
			`{"code":5,"error":"the cluster's tree shows no Pod of Deployment web/api","message":"the cluster's tree shows no Pod of Deployment web/api"}`},
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web", "ok", 400,
			`{"code":3,"error":"name a Pod (podName), or a resource (kind, group, resourceName) whose Pods' logs to show",` +
				`"message":"name a Pod (podName), or a resource (kind, group, resourceName) whose Pods' logs to show"}`},
		// Logs are asked for the Argo CD user, whom Argo CD's RBAC must
		// let get them: carol may not, and a session with no user is no
		// one. Nothing is asked.
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&podName=web-1", "viewer", 403,
			`{"code":7,"error":"permission denied: Argo CD's RBAC does not let carol get logs, shop/fleet-prod/web",` +
				`"message":"permission denied: Argo CD's RBAC does not let carol get logs, shop/fleet-prod/web"}`},
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&kind=Deployment&group=apps&resourceName=web", "anonymous", 401,
			`{"code":16,"error":"Argo CD's session names no user: a log question of a mirrored Application is made for the Argo CD user who asks it; log in to Argo CD",` +
				`"message":"Argo CD's session names no user: a log question of a mirrored Application is made for the Argo CD user who asks it; log in to Argo CD"}`},
		{"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&podName=web-1", "stolen", 403,
			`{"error":"permission denied","message":"permission denied","code":7}`},
	} {
		if status, body := get(tc.path, tc.token); status != tc.status || body != tc.body {
			t.Errorf("GET %s as %s: %d %s\nwant %d %s", tc.path, tc.token, status, body, tc.status, tc.body)
		}
	}
	send := func(method, path string) (int, string) {
		t.Helper()
		return callProxy(t, method, srv.URL+path, "ok")
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodDelete, "/api/v1/applications/web/resource?appNamespace=fleet-prod&namespace=web&resourceName=demo&version=v1&kind=ConfigMap"},
		{http.MethodPost, "/api/v1/applications/web/resource?appNamespace=fleet-prod&namespace=web&resourceName=demo&version=v1&kind=ConfigMap"},
		{http.MethodPost, "/api/v1/applications/web/resource/actions?appNamespace=fleet-prod&resourceName=web&kind=Deployment"},
	} {
		if status, body := send(c.method, c.path); status != http.StatusForbidden || !strings.Contains(body, "on that cluster") {
			t.Errorf("%s %s on a mirrored Application: %d %s, want refused", c.method, c.path, status, body)
		}
	}
	if status, body := send(http.MethodDelete, "/api/v1/applications/own/resource?appNamespace=fleet-prod"); status != 200 || !strings.Contains(body, "controller's") {
		t.Errorf("a resource of an Application that is not mirrored: %d %s, want passed on", status, body)
	}
	want := "tree prod argocd/web,diff prod argocd/web,manifest prod argocd/web /v1/ConfigMap web/demo," +
		"logs prod argocd/web web/web-1 {Container:app TailLines:10 SinceSeconds:0 Timestamps:true} for argocd:alice[team-a]," +
		"logs prod argocd/web web/web-1 {Container: TailLines:0 SinceSeconds:60 Timestamps:true} for argocd:alice[team-a]," +
		"tree prod argocd/web,logs prod argocd/web web/web-1 {Container: TailLines:0 SinceSeconds:0 Timestamps:true} for argocd:alice[team-a]," +
		"logs prod argocd/web web/web-2 {Container: TailLines:0 SinceSeconds:0 Timestamps:true} for argocd:alice[team-a],tree prod argocd/web"
	if got := strings.Join(hub.asked, ","); got != want {
		t.Errorf("asked %s\nwant  %s", got, want)
	}

	hub.err = &api.ResponseError{Status: http.StatusGatewayTimeout, Body: api.Error{Error: "cluster prod did not answer within 10s: its state is Stale"}}
	if status, body := get("/api/v1/applications/web/resource-tree?appNamespace=fleet-prod", "ok"); status != 504 ||
		!strings.Contains(body, `"message":"cluster prod did not answer within 10s: its state is Stale"`) || !strings.Contains(body, `"code":4`) {
		t.Errorf("a cluster that does not answer: %d %s", status, body)
	}
}

// callProxy makes a call of method to url with the bearer token, and returns
// its status and whole body.
func callProxy(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	return callProxyWith(t, method, url, token, "")
}

// callProxyWith is callProxy with a body.
func callProxyWith(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// streamingProxy serves a UIProxy of argo that asks hub, and asks a
// stream's question again every 10 ms.
func streamingProxy(t *testing.T, argo *httptest.Server, hub *fakeInspector) *httptest.Server {
	t.Helper()
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.every = 10 * time.Millisecond
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

// TestUIProxyStreamsTheTree: the tree's stream sends the cluster's tree as
// Argo CD's server-sent events, again after each interval, and ends with
// an error event when a question fails.
func TestUIProxyStreamsTheTree(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	srv := streamingProxy(t, argo, hub)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/stream/applications/web/resource-tree?appNamespace=fleet-prod", nil)
	req.Header.Set("Authorization", "Bearer ok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	var events []string
	for lines.Scan() && len(events) < 2 {
		if l := lines.Text(); l != "" {
			events = append(events, l)
		}
	}
	want := `data: {"result":{"nodes":[{"kind":"ConfigMap","name":"demo"}]}}`
	if len(events) != 2 || events[0] != want || events[1] != want {
		t.Errorf("events %q, want two of %s", events, want)
	}
	hub.mu.Lock()
	hub.err = &api.ResponseError{Status: http.StatusGatewayTimeout, Body: api.Error{Error: "no answer"}}
	hub.mu.Unlock()
	var last string
	for lines.Scan() {
		if l := lines.Text(); l != "" {
			last = l
		}
	}
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "no answer") {
		t.Errorf("the stream's last event %q, want the error", last)
	}
}

// TestUIProxyChecksTheNamespace: with the mirror's namespace prefix, an
// Application whose marks name a cluster the mirror writes in another
// namespace is refused, and nothing is asked or relayed.
func TestUIProxyChecksTheNamespace(t *testing.T) {
	argo := fakeArgoCD(t)
	for prefix, want := range map[string]int{"fleet-": http.StatusOK, "mirror-": http.StatusConflict} {
		hub := &fakeInspector{}
		p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil, WithProxyNamespacePrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/applications/web/resource-tree?appNamespace=fleet-prod"},
			{http.MethodPost, "/api/v1/applications/web/sync?appNamespace=fleet-prod"},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer ok")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || (want == http.StatusConflict && !strings.Contains(string(b), "the mirror has not written it so")) {
				t.Errorf("prefix %s, %s %s: %d %s, want %d", prefix, c.method, c.path, resp.StatusCode, b, want)
			}
		}
		if asked := len(hub.asked) + len(hub.calls); (want == http.StatusConflict) != (asked == 0) {
			t.Errorf("prefix %s: asked %v, relayed %v", prefix, hub.asked, hub.calls)
		}
		srv.Close()
	}
}

// TestUIProxyLogsAtMostTenPods: the logs of an owner of many Pods ask for
// maxLogPods of them, not all.
func TestUIProxyLogsAtMostTenPods(t *testing.T) {
	argo := fakeArgoCD(t)
	var nodes []string
	for i := range 25 {
		nodes = append(nodes, fmt.Sprintf(`{"kind":"Pod","namespace":"web","name":"web-%d","parentRefs":[{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"web-5f"}]}`, i))
	}
	hub := &fakeInspector{tree: `{"nodes":[{"group":"apps","kind":"ReplicaSet","namespace":"web","name":"web-5f"},` + strings.Join(nodes, ",") + `]}`}
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet,
		srv.URL+"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&kind=ReplicaSet&group=apps&resourceName=web-5f", nil)
	req.Header.Set("Authorization", "Bearer ok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	logs := 0
	for _, a := range hub.asked {
		if strings.HasPrefix(a, "logs ") {
			logs++
		}
	}
	if resp.StatusCode != http.StatusOK || logs != maxLogPods {
		t.Errorf("%s, %d Pods' logs asked, want %d", resp.Status, logs, maxLogPods)
	}
}

// TestUIProxyRefusesALargeChange: a change's body past maxCallBody is
// refused, and nothing is asked or relayed.
func TestUIProxyRefusesALargeChange(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	big := `{"project":"` + strings.Repeat("x", maxCallBody) + `"}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/api/v1/applications/web/spec?appNamespace=fleet-prod", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer ok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "over") || len(hub.calls)+len(hub.asked) != 0 {
		t.Errorf("a 2 MiB spec: %s %.200s, relayed %v", resp.Status, b, hub.calls)
	}
}

// TestUIProxyBoundsTheHubsCalls: a relayed change whose hub does not
// answer ends with a failure when its bound passes, not when the caller
// gives up.
func TestUIProxyBoundsTheHubsCalls(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	hub.hang = true
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.hubTimeout = 50 * time.Millisecond
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/applications/web/sync?appNamespace=fleet-prod", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer ok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "deadline exceeded") {
		t.Errorf("a sync the hub does not answer: %s %s, want 502 naming the deadline", resp.Status, b)
	}
}

// TestUIProxyFollowsLogs: a followed log gives the Pod's lines with their
// time stamps, then asks again every interval for the lines written since
// the Pod's last question and a margin (all of them, whatever the
// caller's tail), and gives each new line once: lines read again, of an
// older or the same time, are not given twice, and a line written twice
// at one time is given twice. A question that fails is asked again; an
// answer the agent cut says so. It ends when the caller goes; a log that
// is not followed ends with the last entry. The lines of an agent that
// does not say they begin with their time stamps are given as they are.
func TestUIProxyFollowsLogs(t *testing.T) {
	argo := fakeArgoCD(t)
	// The Pod's log as the cluster answers it: the whole log so far, more
	// lines after each question; the second question fails, the fourth's
	// answer is cut.
	hub := &fakeInspector{log: func(asked int) fakeLog {
		lines := []string{"2026-11-27T10:00:00.000000001Z started", "2026-11-27T10:00:00.000000001Z }", "no time stamp",
			"2026-11-27T10:00:00.000000001Z }"}
		for i := 1; i < asked; i++ {
			lines = append(lines, fmt.Sprintf("2026-11-27T10:00:%02d.5Z tick %d", i, i))
			if i == 2 {
				lines = append(lines, "2026-11-27T10:00:02.5Z }", "2026-11-27T10:00:02.5Z }")
			}
		}
		l := fakeLog{lines: lines, truncated: asked == 3}
		if asked == 1 {
			l.err = &api.ResponseError{Status: http.StatusGatewayTimeout, Body: api.Error{Error: "no answer"}}
		}
		return l
	}}
	srv := streamingProxy(t, argo, hub)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		srv.URL+"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&podName=web-1&follow=true&sinceSeconds=60&tailLines=5", nil)
	req.Header.Set("Authorization", "Bearer ok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type entry struct{ Content, TimeStamp, TimeStampStr string }
	var got []entry
	lines := bufio.NewScanner(resp.Body)
	for len(got) < 9 && lines.Scan() {
		l, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct{ Result entry }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("event %s: %v", l, err)
		}
		got = append(got, e.Result)
	}
	cancel()
	t0 := []string{"2026-11-27T10:00:00Z", "2026-11-27T10:00:00.000000001Z"}
	want := []entry{
		{"started", t0[0], t0[1]},
		{"}", t0[0], t0[1]},
		{"no time stamp", "", ""},
		{"}", t0[0], t0[1]},
		{"tick 1", "2026-11-27T10:00:01Z", "2026-11-27T10:00:01.5Z"},
		{"[argosy: lines of web-1 were dropped here: more were written within 10ms than the agent answers at once]", "", ""},
		{"tick 2", "2026-11-27T10:00:02Z", "2026-11-27T10:00:02.5Z"},
		{"}", "2026-11-27T10:00:02Z", "2026-11-27T10:00:02.5Z"},
		{"}", "2026-11-27T10:00:02Z", "2026-11-27T10:00:02.5Z"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the followed log gave\n%v\nwant\n%v", got, want)
	}
	hub.mu.Lock()
	asked := slices.Clone(hub.asked)
	hub.mu.Unlock()
	if len(asked) < 4 || asked[0] != "logs prod argocd/web web/web-1 {Container: TailLines:5 SinceSeconds:60 Timestamps:true} for argocd:alice[team-a]" {
		t.Fatalf("asked %q, want the first question as the caller's", asked)
	}
	for _, a := range asked[1:4] {
		// The time since the Pod's last answered question (10 or 20 ms
		// and the questions') and the margin, in whole seconds up; all
		// the lines of that time.
		var since int
		if _, err := fmt.Sscanf(a, "logs prod argocd/web web/web-1 {Container: TailLines:100000 SinceSeconds:%d Timestamps:true} for argocd:alice[team-a]", &since); err != nil ||
			since < 11 || since > 20 {
			t.Errorf("asked again %q, want all the lines of 11 s back (or a few more on a slow machine)", a)
		}
	}

	// Not followed, of an agent that does not write time stamps: the
	// lines as they are, and the last entry.
	hub.log = func(int) fakeLog {
		return fakeLog{lines: []string{"2026-11-27T10:00:00+02:00 INFO ready"}, noTimestamps: true}
	}
	status, body := callProxy(t, http.MethodGet, srv.URL+"/api/v1/applications/web/logs?appNamespace=fleet-prod&namespace=web&podName=web-1", "ok")
	if want := `data: {"result":{"content":"2026-11-27T10:00:00+02:00 INFO ready","podName":"web-1","last":false}}` + "\n\n" +
		`data: {"result":{"content":"","podName":"","last":true}}` + "\n\n"; status != http.StatusOK || body != want {
		t.Errorf("a log not followed: %d %s\nwant %s", status, body, want)
	}
}
