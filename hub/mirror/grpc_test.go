package mirror

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/argosyproj/argosy/hub/api"
)

// grpcReply is what a gRPC call got: its messages, status and message.
type grpcReply struct {
	messages [][]byte
	status   string
	message  string
	header   http.Header
}

// callGRPC makes a unary or server-streaming gRPC call of Argo CD's
// ApplicationService on base, natively over HTTP/2 in clear text or as
// gRPC-Web over HTTP/1.1, with msg as its one message.
func callGRPC(t *testing.T, base, method string, web bool, token string, msg []byte) grpcReply {
	t.Helper()
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	frame = append(frame, msg...)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/"+appService+"/"+method, bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	if web {
		req.Header.Set("Content-Type", "application/grpc-web+proto")
	} else {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		var ps http.Protocols
		ps.SetUnencryptedHTTP2(true)
		tr.Protocols = &ps
	}
	if token != "" {
		req.Header.Set("token", token)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := grpcReply{header: resp.Header}
	if resp.Trailer == nil {
		resp.Trailer = http.Header{}
	}
	for len(body) >= 5 {
		n := binary.BigEndian.Uint32(body[1:5])
		m := body[5 : 5+n]
		if body[0]&0x80 != 0 { // gRPC-Web's trailer frame
			for _, l := range strings.Split(strings.TrimSpace(string(m)), "\r\n") {
				k, v, _ := strings.Cut(l, ": ")
				resp.Trailer.Set(k, v)
			}
		} else {
			out.messages = append(out.messages, m)
		}
		body = body[5+n:]
	}
	out.status, out.message = resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if out.status == "" { // trailers-only
		out.status, out.message = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	out.message, _ = url.PathUnescape(out.message)
	return out
}

// serveH2C serves h over HTTP/1.1 and HTTP/2 in clear text, as the
// mirror serves its proxy, until the test ends.
func serveH2C(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	var ps http.Protocols
	ps.SetHTTP1(true)
	ps.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &ps
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// fields encodes string fields of a message.
func fields(kv ...any) []byte {
	var b []byte
	for i := 0; i < len(kv); i += 2 {
		n := protowire.Number(kv[i].(int))
		switch v := kv[i+1].(type) {
		case string:
			b = protowire.AppendTag(b, n, protowire.BytesType)
			b = protowire.AppendString(b, v)
		case int:
			b = protowire.AppendTag(b, n, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	return b
}

// readFields decodes a message's string and varint fields.
func readFields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			out[num], b = append(out[num], string(v)), b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			out[num], b = append(out[num], v), b[n:]
		default:
			t.Fatalf("field %d of wire type %d", num, typ)
		}
	}
	return out
}

// fieldAt is the string at the path of field numbers in message b, each
// step the first of its field; "" when there is none.
func fieldAt(t *testing.T, b []byte, path ...protowire.Number) string {
	t.Helper()
	for _, n := range path {
		vs := readFields(t, b)[n]
		if len(vs) == 0 {
			return ""
		}
		s, ok := vs[0].(string)
		if !ok {
			return ""
		}
		b = []byte(s)
	}
	return string(b)
}

// TestUIProxyGRPC: the argocd CLI's calls, natively over HTTP/2 and as
// gRPC-Web, get a mirrored Application's tree, managed resources, live
// manifest and a Pod's logs from the cluster in Argo CD's messages; what
// the API server refuses the caller is its refusal, with nothing asked; a
// change to a mirrored Application's resource is refused; an Application
// that is not mirrored, and every other call, go on to the API server
// unchanged; a call that does not decode is refused.
func TestUIProxyGRPC(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveH2C(t, p)

	web := fields(1, "web", 7, "fleet-prod")
	for _, native := range []bool{true, false} {
		r := callGRPC(t, srv.URL, "ResourceTree", !native, "ok", web)
		// ApplicationTree: nodes 1, each's resourceRef 1, its kind 3.
		if r.status != "0" || len(r.messages) != 1 || fieldAt(t, r.messages[0], 1, 1, 3) != "ConfigMap" {
			t.Errorf("ResourceTree (native %v): %+v", native, r)
		}
	}
	r := callGRPC(t, srv.URL, "ManagedResources", false, "ok", web)
	items := map[protowire.Number][]any{}
	if r.status == "0" && len(r.messages) == 1 {
		items = readFields(t, r.messages[0])
	}
	// ManagedResourcesResponse: items 1, each ResourceDiff's kind 2 and
	// name 4.
	if len(items[1]) != 1 || fieldAt(t, r.messages[0], 1, 2) != "ConfigMap" || fieldAt(t, r.messages[0], 1, 4) != "demo" {
		t.Errorf("ManagedResources: %+v, items %v", r, items)
	}
	r = callGRPC(t, srv.URL, "GetResource", false, "ok", fields(1, "web", 2, "web", 3, "demo", 4, "v1", 6, "ConfigMap", 7, "fleet-prod"))
	if r.status != "0" || len(r.messages) != 1 || readFields(t, r.messages[0])[1][0] != `{"kind":"ConfigMap"}` {
		t.Errorf("GetResource: %+v", r)
	}
	r = callGRPC(t, srv.URL, "PodLogs", true, "ok", fields(1, "web", 2, "web", 3, "web-1", 4, "app", 7, 5, 10, "health", 15, "fleet-prod"))
	if r.status != "0" || len(r.messages) != 2 {
		t.Fatalf("PodLogs: %+v", r)
	}
	if first, last := readFields(t, r.messages[0]), readFields(t, r.messages[1]); first[1][0] != "GET /health" || first[5][0] != "web-1" ||
		first[3][0] != uint64(0) || last[3][0] != uint64(1) || last[1][0] != "" {
		t.Errorf("PodLogs: entries %v, %v", first, last)
	}
	want := "tree prod argocd/web,tree prod argocd/web,diff prod argocd/web,manifest prod argocd/web /v1/ConfigMap web/demo," +
		"logs prod argocd/web web/web-1 {Container:app TailLines:5 SinceSeconds:0 Timestamps:true} for argocd:alice[team-a]"
	if got := strings.Join(hub.asked, ","); got != want {
		t.Errorf("asked %s\nwant  %s", got, want)
	}

	// What the API server does not show the caller: its refusal, nothing
	// asked.
	hub.asked = nil
	if r := callGRPC(t, srv.URL, "ResourceTree", false, "stolen", web); r.status != "7" || r.message != "permission denied" || len(r.messages) != 0 {
		t.Errorf("ResourceTree with a token the API server refuses: %+v", r)
	}
	for _, m := range []string{"PatchResource", "DeleteResource", "RunResourceAction"} {
		ns := 9
		if m == "RunResourceAction" {
			ns = 8
		}
		if r := callGRPC(t, srv.URL, m, false, "ok", fields(1, "web", ns, "fleet-prod")); r.status != "7" || !strings.Contains(r.message, "on that cluster") {
			t.Errorf("%s of a mirrored Application's resource: %+v, want refused", m, r)
		}
	}
	if len(hub.asked) != 0 {
		t.Errorf("asked %v", hub.asked)
	}

	// What the API server answers only from its controller's cache: none,
	// for a mirrored Application; nothing asked.
	for _, c := range []struct {
		method string
		msg    []byte
	}{
		{"ListResourceEvents", fields(1, "web", 2, "web", 3, "demo", 4, "u-1", 5, "fleet-prod")},
		{"ListResourceEvents", fields(1, "web", 4, "u-1", 5, "fleet-prod")}, // the resource named by its uid alone
		{"ListResourceActions", fields(1, "web", 2, "web", 3, "demo", 4, "v1", 6, "ConfigMap", 7, "fleet-prod")},
		{"ListResourceLinks", fields(1, "web", 2, "web", 3, "demo", 4, "v1", 6, "ConfigMap", 7, "fleet-prod")},
	} {
		method := c.method
		if r := callGRPC(t, srv.URL, method, false, "ok", c.msg); r.status != "0" || len(r.messages) != 1 || len(r.messages[0]) != 0 ||
			r.header.Get("X-Controller") != "" {
			t.Errorf("%s: %+v, want one empty message", method, r)
		}
	}
	if len(hub.asked) != 0 {
		t.Errorf("asked %v", hub.asked)
	}

	// Passed on as it came.
	own := fields(1, "own", 7, "fleet-prod")
	for _, c := range []struct {
		method string
		web    bool
		msg    []byte
		proto  string
	}{
		{"ResourceTree", false, own, "HTTP/2.0"},
		{"ResourceTree", true, own, "HTTP/1.1"},
		{"DeleteResource", false, fields(1, "own", 9, "fleet-prod"), "HTTP/2.0"},
		{"Get", false, web, "HTTP/2.0"},
		{"List", true, web, "HTTP/1.1"},
		// The mirrored Application's own events, in the mirror cluster.
		{"ListResourceEvents", false, fields(1, "web", 5, "fleet-prod"), "HTTP/2.0"},
	} {
		r := callGRPC(t, srv.URL, c.method, c.web, "ok", c.msg)
		if want := c.proto + " /" + appService + "/" + c.method + " " + strconv.Itoa(5+len(c.msg)); r.status != "0" || r.header.Get("X-Controller") != want {
			t.Errorf("%s (web %v): %+v, want passed on as %s", c.method, c.web, r, want)
		}
	}

	// Calls that do not decode.
	for _, c := range []struct {
		msg  []byte
		code string
	}{
		{fields(7, "fleet-prod"), "3"},          // no Application
		{[]byte{0x0a, 0xff}, "3"},               // a string past the end
		{fields(1, 5), "3"},                     // the name as an integer
		{bytes.Repeat([]byte{'x'}, 3<<20), "8"}, // too large
	} {
		if r := callGRPC(t, srv.URL, "ResourceTree", false, "ok", c.msg); r.status != c.code {
			t.Errorf("ResourceTree of %.20q: %+v, want code %s", c.msg, r, c.code)
		}
	}
	if len(hub.asked) != 0 {
		t.Errorf("asked %v", hub.asked)
	}
}

// TestUIProxyGRPCCompressed: a compressed call is refused, not read.
func TestUIProxyGRPCCompressed(t *testing.T) {
	if _, code, err := oneMessage([]byte{1, 0, 0, 0, 0}); code != grpcUnimplemented || err == nil {
		t.Errorf("a compressed message: %d %v", code, err)
	}
	if _, code, err := oneMessage([]byte{0, 0, 0, 0, 9, 1}); code != grpcInvalidArgument || err == nil {
		t.Errorf("a message shorter than its frame: %d %v", code, err)
	}
}

// TestUIProxyWatchesTheTree: WatchResourceTree streams the tree, one
// message each interval, and ends with the hub's refusal as its status.
func TestUIProxyWatchesTheTree(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	srv := streamingProxy(t, argo, hub)
	hub.errAfter = 3 // the fourth question fails, which ends the stream
	hub.err = &api.ResponseError{Status: http.StatusGatewayTimeout, Body: api.Error{Error: "no answer"}}
	r := callGRPC(t, srv.URL, "WatchResourceTree", true, "ok", fields(1, "web", 7, "fleet-prod"))
	if len(r.messages) < 3 || r.status != "4" || r.message != "no answer" {
		t.Errorf("WatchResourceTree: %d messages, status %s %q; want 3 or more, then 4", len(r.messages), r.status, r.message)
	}
}

// FuzzDecodeCall: no message makes decodeCall panic, and a call it reads
// names an Application.
func FuzzDecodeCall(f *testing.F) {
	f.Add(fields(1, "web", 7, "fleet-prod"), 0)
	f.Add(fields(1, "web", 2, "web", 3, "web-1", 5, 60, 7, 10, 10, "!GET", 15, "fleet-prod"), 1)
	f.Add([]byte{0x0a, 0x80}, 2)
	methods := []string{"ResourceTree", "PodLogs", "GetResource", "DeleteResource", "UpdateSpec", "Patch", "Get", "Rollback", "Update"}
	f.Fuzz(func(t *testing.T, msg []byte, i int) {
		m := grpcMethods[methods[(i%len(methods)+len(methods))%len(methods)]]
		c, err := decodeCall(msg, m)
		if err == nil && c.name == "" {
			t.Errorf("%q read as a call of no Application", msg)
		}
	})
}

// TestUIProxyRelaysChanges: a sync, rollback, terminate, delete or
// refresh of a mirrored Application, asked of the API server's REST API
// (the UI) or its gRPC (the argocd CLI), is made through the hub for the
// Argo CD user of the caller's session, once Argo CD's RBAC lets that user
// make it; so is a spec edit, at the generation mirrored; the answer is
// the API server's shape. A user Argo CD's RBAC
// refuses, a session of no user, a selective sync and a spoke-owned
// Application are refused with nothing relayed; the hub's refusal is the
// answer; an Application that is not mirrored goes on to the API server
// with its body.
func TestUIProxyRelaysChanges(t *testing.T) {
	argo := fakeArgoCD(t)
	hub := &fakeInspector{}
	refusals := NewRefusals(time.Minute)
	p, err := NewUIProxy(argo.URL, argo.Client(), hub, nil, WithProxyRefusals(refusals))
	if err != nil {
		t.Fatal(err)
	}
	srv := serveH2C(t, p)
	do := func(method, path, token, body string) (int, string) {
		t.Helper()
		status, b := callProxyWith(t, method, srv.URL+path, token, body)
		return status, strings.TrimSpace(b)
	}
	const q = "?appNamespace=fleet-prod"
	for _, tc := range []struct {
		method, path, body string
		status             int
		answer, call       string
		dry                bool
	}{
		{"POST", "/api/v1/applications/web/sync" + q, `{"name":"web","revision":"abc","prune":true}`, 200, `"name":"web"`,
			`operate prod argocd/web {"operation":"sync","revision":"abc","prune":true}`, false},
		// Argo CD's dry run: the cluster's sync runs without applying.
		{"POST", "/api/v1/applications/web/sync" + q, `{"dryRun":true}`, 200, `"name":"web"`,
			`operate prod argocd/web {"operation":"sync","dryRun":true}`, false},
		{"POST", "/api/v1/applications/web/rollback" + q, `{"id":"3","prune":true}`, 200, `"name":"web"`,
			`operate prod argocd/web {"operation":"rollback","prune":true,"historyId":3}`, false},
		{"DELETE", "/api/v1/applications/web/operation" + q, "", 200, `{}`, `operate prod argocd/web {"operation":"terminate"}`, false},
		{"DELETE", "/api/v1/applications/web" + q + "&cascade=false", "", 200, `{}`, `delete applications prod argocd/web cascade=false`, false},
		{"DELETE", "/api/v1/applications/web" + q, "", 200, `{}`, `delete applications prod argocd/web cascade=true`, false},
		// A spec edit (UpdateSpec, Update) at the generation mirrored,
		// without the mirror's labels.
		{"PUT", "/api/v1/applications/web/spec" + q, `{"project":"shop","source":{"path":"web2"}}`, 200, `{"project":"shop","source":{"path":"web2"}}`,
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},` +
				`"spec":{"project":"shop","source":{"path":"web2"}}}`, false},
		{"PUT", "/api/v1/applications/web" + q, `{"metadata":{"name":"web","labels":{"tier":"front"}},"spec":{"project":"shop"}}`, 200, `"tier":"front"`,
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"labels":{"tier":"front"},` +
				`"name":"web","namespace":"argocd"},"spec":{"project":"shop"}}`, false},
		// A patch (argocd app patch): JSON patch, the default, and merge.
		{"PATCH", "/api/v1/applications/web" + q, `{"name":"web","patch":"[{\"op\":\"add\",\"path\":\"/spec/source\",\"value\":{\"path\":\"p\"}}]"}`,
			200, `"source":{"path":"p"}`,
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},` +
				`"spec":{"project":"shop","source":{"path":"p"}}}`, false},
		{"PATCH", "/api/v1/applications/web" + q, `{"patch":"{\"metadata\":{\"labels\":{\"tier\":\"back\"}}}","patchType":"merge"}`,
			200, `"tier":"back"`,
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"labels":{"tier":"back"},` +
				`"name":"web","namespace":"argocd"},"spec":{"project":"shop"}}`, false},
		// A refresh, then the GET it is, without the refresh.
		{"GET", "/api/v1/applications/web" + q + "&refresh=hard", "", 200, `"name":"web"`,
			`operate prod argocd/web {"operation":"refresh","refreshType":"hard"}`, false},
	} {
		hub.calls, hub.opts = nil, nil
		status, body := do(tc.method, tc.path, "ok", tc.body)
		if status != tc.status || !strings.Contains(body, tc.answer) || len(hub.calls) != 1 || hub.calls[0] != tc.call {
			t.Errorf("%s %s %s: %d %s, relayed %q\nwant %d %s, relayed %s", tc.method, tc.path, tc.body, status, body, hub.calls, tc.status, tc.answer, tc.call)
			continue
		}
		if o := hub.opts[0]; o.ActAs == nil || o.ActAs.Source != "argocd" || o.ActAs.User != "alice" || strings.Join(o.ActAs.Groups, ",") != "team-a" ||
			o.DryRun != tc.dry {
			t.Errorf("%s %s: relayed with %+v (%+v), want for Argo CD user alice of team-a, dry run %v", tc.method, tc.path, o, o.ActAs, tc.dry)
		}
	}

	// Refused, nothing relayed.
	hub.calls = nil
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
		msg                       string
	}{
		{"POST", "/api/v1/applications/web/sync" + q, "viewer", `{}`, 403, "Argo CD's RBAC does not let carol sync applications, shop/fleet-prod/web"},
		{"DELETE", "/api/v1/applications/web" + q, "viewer", "", 403, "does not let carol delete"},
		{"PUT", "/api/v1/applications/web/spec" + q, "viewer", `{"project":"shop"}`, 403, "does not let carol update"},
		{"PUT", "/api/v1/applications/web/spec" + q, "ok", `[1]`, 400, "the spec is not a JSON object"},
		{"PUT", "/api/v1/applications/web" + q, "ok", `{"spec":`, 400, "does not decode"},
		{"PATCH", "/api/v1/applications/web" + q, "ok", `{"patch":"[{\"op\":\"remove\",\"path\":\"/spec\"}]"}`, 400, "has no spec"},
		{"PATCH", "/api/v1/applications/web" + q, "ok", `{"patch":"{}","patchType":"strategic"}`, 400, "want json or merge"},
		{"PATCH", "/api/v1/applications/web" + q, "ok", `{"patchType":"merge"}`, 400, "holds no patch"},
		{"POST", "/api/v1/applications/web/sync" + q, "anonymous", `{}`, 401, "names no user"},
		{"POST", "/api/v1/applications/web/sync" + q, "stolen", `{}`, 403, "permission denied"},
		{"POST", "/api/v1/applications/web/sync" + q, "ok", `{"resources":[{"kind":"ConfigMap","name":"demo"}]}`, 400, "select them all"},
		{"POST", "/api/v1/applications/edge/sync" + q, "ok", `{}`, 403, "autonomous mode"},
		{"POST", "/api/v1/applications/web/rollback" + q, "ok", `{"id":"three"}`, 400, "does not decode"},
		{"POST", "/api/v1/applications/web/sync" + q, "ok", `{"revision":`, 400, "does not decode"},
	} {
		if status, body := do(tc.method, tc.path, tc.token, tc.body); status != tc.status || !strings.Contains(body, tc.msg) {
			t.Errorf("%s %s as %s %s: %d %s, want %d %q", tc.method, tc.path, tc.token, tc.body, status, body, tc.status, tc.msg)
		}
	}
	if len(hub.calls) != 0 {
		t.Errorf("relayed %q, want nothing", hub.calls)
	}
	hub.refuse = &api.ResponseError{Status: http.StatusForbidden, Body: api.Error{Error: "argocd:alice has role viewer"}}
	if status, body := do("POST", "/api/v1/applications/web/sync"+q, "ok", `{}`); status != 403 || !strings.Contains(body, "argocd:alice has role viewer") {
		t.Errorf("a sync the hub refuses: %d %s", status, body)
	}
	// The mirror writes why on the object; Argo CD's own refusals are the
	// caller's alone.
	if c, ok := refusals.condition("fleet-prod", "web"); !ok || c["message"] != "argocd:alice's sync was refused: argocd:alice has role viewer" {
		t.Errorf("the hub's refusal's condition: %v %v", c, ok)
	}
	if _, ok := refusals.condition("fleet-prod", "edge"); ok {
		t.Error("a refusal of the proxy's own is written on the object")
	}
	hub.refuse = nil
	hub.calls = nil
	if status, body := do("POST", "/api/v1/applications/own/sync"+q, "ok", `{"revision":"x"}`); status != 200 ||
		body != `"controller's POST /api/v1/applications/own/sync{"revision":"x"}"` || len(hub.calls) != 0 {
		t.Errorf("a sync of an Application that is not mirrored: %d %s, relayed %q; want passed on with its body", status, body, hub.calls)
	}

	// The argocd CLI's gRPC.
	for _, tc := range []struct {
		method string
		msg    []byte
		call   string
		app    bool
	}{
		{"Sync", fields(1, "web", 2, "abc", 4, 1, 12, "fleet-prod"), `operate prod argocd/web {"operation":"sync","revision":"abc","prune":true}`, true},
		{"Rollback", fields(1, "web", 2, 2, 6, "fleet-prod"), `operate prod argocd/web {"operation":"rollback","historyId":2}`, true},
		{"TerminateOperation", fields(1, "web", 2, "fleet-prod"), `operate prod argocd/web {"operation":"terminate"}`, false},
		{"Delete", fields(1, "web", 4, "fleet-prod"), `delete applications prod argocd/web cascade=true`, false},
		{"Delete", fields(1, "web", 2, 0, 4, "fleet-prod"), `delete applications prod argocd/web cascade=false`, false},
		// ApplicationUpdateRequest: the Application 1 (metadata 1: name 1,
		// namespace 3, labels 11 of key 1 and value 2; spec 2: project 3).
		{"Update", fields(1, string(fields(1, string(fields(1, "web", 3, "fleet-prod", 11, string(fields(1, "tier", 2, "edge")))),
			2, string(fields(3, "shop3"))))),
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"labels":{"tier":"edge"},` +
				`"name":"web","namespace":"argocd"},"spec":{"destination":{},"project":"shop3"}}`, true},
		// ApplicationPatchRequest: name 1, patch 2, type 3; the answer an
		// Application.
		{"Patch", fields(1, "web", 2, `{"spec":{"project":"shop2"}}`, 3, "merge", 5, "fleet-prod"),
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},` +
				`"spec":{"project":"shop2"}}`, true},
		// ApplicationSpec: source 1 (its path 2), project 3.
		{"UpdateSpec", fields(1, "web", 2, string(fields(1, string(fields(2, "web2")), 3, "shop")), 4, "fleet-prod"),
			`apply applications [prod] gen=7 {"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},` +
				`"spec":{"destination":{},"project":"shop","source":{"path":"web2","repoURL":""}}}`, false},
	} {
		hub.calls, hub.opts = nil, nil
		r := callGRPC(t, srv.URL, tc.method, false, "ok", tc.msg)
		// Application: metadata 1, its name 1.
		if r.status != "0" || len(r.messages) != 1 || len(hub.calls) != 1 || hub.calls[0] != tc.call ||
			(tc.app && fieldAt(t, r.messages[0], 1, 1) != "web") || (!tc.app && tc.method != "UpdateSpec" && len(r.messages[0]) != 0) ||
			(tc.method == "UpdateSpec" && fieldAt(t, r.messages[0], 3) != "shop") {
			t.Errorf("%s: %+v, relayed %q\nwant %s", tc.method, r, hub.calls, tc.call)
			continue
		}
		if o := hub.opts[0]; o.ActAs == nil || o.ActAs.Source != "argocd" || o.ActAs.User != "alice" {
			t.Errorf("%s relayed with %+v, want for alice", tc.method, o.ActAs)
		}
	}
	// A Get that asks a refresh (ApplicationQuery: name 1, refresh 2,
	// appNamespace 7) is relayed, then goes on without the refresh; one
	// that does not goes on as it came, with nothing asked.
	hub.calls = nil
	get := fields(1, "web", 2, "hard", 7, "fleet-prod")
	r := callGRPC(t, srv.URL, "Get", false, "ok", get)
	if want := "HTTP/2.0 /" + appService + "/Get " + strconv.Itoa(5+len(fields(1, "web", 7, "fleet-prod"))); r.status != "0" ||
		r.header.Get("X-Controller") != want || len(hub.calls) != 1 || hub.calls[0] != `operate prod argocd/web {"operation":"refresh","refreshType":"hard"}` {
		t.Errorf("a Get with a refresh: %+v, relayed %q; want relayed, then passed on as %s", r, hub.calls, want)
	}
	hub.calls = nil
	plain := fields(1, "web", 7, "fleet-prod")
	if r := callGRPC(t, srv.URL, "Get", false, "stolen", plain); r.status != "0" || r.header.Get("X-Controller") == "" || len(hub.calls) != 0 {
		t.Errorf("a Get with no refresh: %+v, relayed %q; want passed on, nothing asked", r, hub.calls)
	}
	hub.calls = nil
	if r := callGRPC(t, srv.URL, "Sync", false, "viewer", fields(1, "web", 12, "fleet-prod")); r.status != "7" || !strings.Contains(r.message, "carol") {
		t.Errorf("a Sync Argo CD's RBAC refuses: %+v", r)
	}
	if r := callGRPC(t, srv.URL, "Sync", false, "ok", fields(1, "web", 7, "x", 12, "fleet-prod")); r.status != "3" {
		t.Errorf("a selective Sync: %+v, want 3", r)
	}
	if len(hub.calls) != 0 {
		t.Errorf("relayed %q, want nothing", hub.calls)
	}
}

// TestPodLogsFollow: PodLogs's follow (field 8) is read, and a log entry
// with a time carries it as a Time (seconds, nanos) and as timeStampStr.
func TestPodLogsFollow(t *testing.T) {
	c, err := decodeCall(fields(1, "web", 3, "web-1", 8, 1, 15, "fleet-prod"), grpcMethods["PodLogs"])
	if err != nil || !c.follow || c.target.Name != "web-1" {
		t.Errorf("PodLogs with follow: %+v, %v", c, err)
	}
	if c, err := decodeCall(fields(1, "web", 3, "web-1"), grpcMethods["PodLogs"]); err != nil || c.follow {
		t.Errorf("PodLogs without follow: %+v, %v", c, err)
	}
	at := time.Date(2026, 11, 27, 10, 0, 1, 500, time.UTC)
	f := readFields(t, logEntryMessage(logEntry{Content: "ready", PodName: "web-1", at: at, TimeStampStr: at.Format(time.RFC3339Nano)}))
	ts := readFields(t, []byte(f[2][0].(string)))
	if f[1][0] != "ready" || f[4][0] != "2026-11-27T10:00:01.0000005Z" || ts[1][0] != uint64(at.Unix()) || ts[2][0] != uint64(500) {
		t.Errorf("entry %v, time %v", f, ts)
	}
	if f := readFields(t, logEntryMessage(logEntry{Last: true})); f[2][0] != "" || f[4][0] != "" || f[3][0] != uint64(1) {
		t.Errorf("the last entry %v, want no time", f)
	}
}
