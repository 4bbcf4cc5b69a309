//go:build integration

package hub_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// answer is one response, read whole.
type answer struct {
	status int
	ctype  string
	body   []byte
}

func call(t *testing.T, method, target, token string, body []byte) answer {
	t.Helper()
	a, _ := callAllow(t, method, target, token, body)
	return a
}

// callAllow is call, returning the answer's Allow header too.
func callAllow(t *testing.T, method, target, token string, body []byte) (answer, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}, resp.Header.Get("Allow")
}

// routeMissing tells an answer for which no route exists from the API's
// answers: the hub's mux answers a 404 or 405 in plain text, where the
// API's are JSON; and the read API, which takes every other GET under
// /api/v1/, answers a path it has no route for with a JSON 404 that says
// "no endpoint".
func routeMissing(a answer) bool {
	switch a.status {
	case http.StatusMethodNotAllowed:
		return true
	case http.StatusNotFound:
	default:
		return false
	}
	if !strings.HasPrefix(a.ctype, "application/json") {
		return true
	}
	var e struct{ Error string }
	return json.Unmarshal(a.body, &e) == nil && strings.HasPrefix(e.Error, "no endpoint ")
}

// target fills an operation's path parameters and required query
// parameters with their documented examples.
func target(t *testing.T, doc map[string]any, o operation) string {
	t.Helper()
	path, q := o.path, url.Values{}
	for _, p := range params(t, doc, o) {
		if p.in != "path" && (p.in != "query" || !p.required) {
			continue
		}
		if p.example == nil {
			t.Fatalf("%s: parameter %s has no example to call it with", o, p.name)
		}
		v := fmt.Sprint(p.example)
		if p.in == "path" {
			path = strings.ReplaceAll(path, "{"+p.name+"}", url.PathEscape(v))
		} else {
			q.Set(p.name, v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}

// check holds an answer to what the document says of the operation: a
// documented status, and a body that matches its schema.
func (v *validator) check(t *testing.T, o operation, a answer) {
	t.Helper()
	if routeMissing(a) {
		t.Errorf("%s: %d %q: the hub has no route for it", o, a.status, a.body)
		return
	}
	ptr, documented := v.responseSchema(t, o, a.status)
	if !documented {
		t.Errorf("%s: status %d is not documented: %s", o, a.status, a.body)
		return
	}
	if ptr == "" {
		return
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
	if err != nil {
		t.Errorf("%s: the %d answer is not JSON: %v\n%s", o, a.status, err, a.body)
		return
	}
	if err := v.validate(t, ptr, inst); err != nil {
		t.Errorf("%s: the %d answer does not match its schema:\n%#v\n%s", o, a.status, err, a.body)
	}
}

// TestDocumentedRoutesAnswer calls every operation of the served document
// on a hub with the read API over SQLite, on the real broker: each answers
// a status the document lists for it, with a body its schema takes, never
// the mux's own 404 or 405; without a token, every /api/v1 route answers
// 401.
func TestDocumentedRoutesAnswer(t *testing.T) {
	r := newRig(t, 2)
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	base := r.start(hub.WithReadAPI(read.New(store)), hub.WithUnauthenticatedLimit(1000, 1000)) // every route is called without a token once
	doc := openAPIDoc(t)
	v := newValidator(t, doc)
	root := r.tokens["root"]

	// The answers without a route are what routeMissing tells apart.
	for _, u := range []string{"/api/v2/whoami", "/api/v1/whoami/again", "/api/v1/no-such-view"} {
		if a := call(t, http.MethodGet, base+u, root, nil); !routeMissing(a) {
			t.Fatalf("GET %s: %d %s %q, want an answer without a route", u, a.status, a.ctype, a.body)
		}
	}
	if a := call(t, http.MethodPost, base+"/api/v1/clusters/prod-eu", root, nil); !routeMissing(a) {
		t.Fatalf("POST /api/v1/clusters/prod-eu: %d %s %q, want the mux's 405", a.status, a.ctype, a.body)
	}

	// A method a path does not take is a 405 whose Allow names those the
	// document lists for it, though the read API's GET /api/v1/ matches
	// every path below it.
	for _, p := range slices.Sorted(maps.Keys(doc["paths"].(map[string]any))) {
		var want []string
		for _, o := range operations(doc) {
			if o.path == p {
				want = append(want, strings.ToUpper(o.method))
				if o.method == "get" {
					want = append(want, http.MethodHead)
				}
			}
		}
		slices.Sort(want)
		a, allow := callAllow(t, http.MethodOptions, base+strings.NewReplacer("{", "x", "}", "").Replace(p), root, nil)
		if a.status != http.StatusMethodNotAllowed || allow != strings.Join(want, ", ") {
			t.Errorf("OPTIONS %s: %d, Allow %q, want 405 with Allow %q", p, a.status, allow, strings.Join(want, ", "))
		}
	}

	// A query parameter given empty is not taken as absent where the
	// document's schema refuses the empty value.
	for _, u := range []string{"/api/v1/objects?kind=", "/api/v1/objects?kind=placements"} {
		if a := call(t, http.MethodGet, base+u, root, nil); a.status != http.StatusBadRequest {
			t.Errorf("GET %s: %d %s, want 400", u, a.status, a.body)
		}
	}

	// The cluster the path examples name is registered with the
	// document's example, so that the calls about it reach its objects.
	ops := operations(doc)
	reg := ops[slices.IndexFunc(ops, func(o operation) bool { return o.op["operationId"] == "registerCluster" })]
	ex, ok := pointer(doc, opPointer(reg)+"/requestBody/content/application~1json/examples/register/value")
	if !ok {
		t.Fatal("registerCluster has no example named register")
	}
	body, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	if a := call(t, http.MethodPut, base+target(t, doc, reg), root, body); a.status != http.StatusOK {
		t.Fatalf("registering the example cluster: %d %s", a.status, a.body)
	}

	// Deletes come last, the cluster's deregistration after its objects'.
	slices.SortStableFunc(ops, func(a, b operation) int {
		return cmp.Or(cmp.Compare(boolInt(a.method == "delete"), boolInt(b.method == "delete")),
			-cmp.Compare(strings.Count(a.path, "/"), strings.Count(b.path, "/")))
	})
	for _, o := range ops {
		t.Run(o.String(), func(t *testing.T) {
			u := base + target(t, doc, o)
			// A body the hub refuses or takes before it checks any
			// manifest: each request example is checked by
			// TestOpenAPIExamples, and this test is about the routes.
			var body []byte
			if _, ok := o.op["requestBody"]; ok {
				body = []byte("{}")
			}
			method := strings.ToUpper(o.method)
			if len(security(doc, o)) > 0 {
				a := call(t, method, u, "", body)
				if a.status != http.StatusUnauthorized {
					t.Errorf("without a token: %d %s, want 401", a.status, a.body)
				}
				v.check(t, o, a)
			}
			a := call(t, method, u, root, body)
			v.check(t, o, a)
			if want, err := hub.OpenAPI(); o.path == "/openapi.json" && (err != nil || !bytes.Equal(a.body, want)) {
				t.Errorf("GET /openapi.json does not serve the document as JSON (%v)", err)
			}
			t.Logf("%d %s", a.status, bytes.TrimSpace(a.body[:min(len(a.body), 160)]))
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestOperationRequestChecked: an operation request with a value its
// schema refuses is a 400, decided before anything is written, never
// the event schema's refusal later.
func TestOperationRequestChecked(t *testing.T) {
	r := newRig(t, 2)
	base := r.start()
	root := r.client(base, "root")
	r.twoTeams(root)
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: appIn("pay", "team-a")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := base + "/api/v1/clusters/prod/applications/argocd/pay/operations?dryRun=true"
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"operation":"sync"}`, http.StatusOK},
		{`{"operation":"sync","historyId":0}`, http.StatusOK},
		{`{"operation":"sync","historyId":-1}`, http.StatusBadRequest},
		{`{"operation":"rollback","historyId":-144115188075855872}`, http.StatusBadRequest},
		{`{"operation":"rollback","historyId":0}`, http.StatusOK}, // Argo CD's first history entry
		{`{"operation":"rollback","historyId":11}`, http.StatusOK},
		{`{"operation":"rollback"}`, http.StatusBadRequest},
		{`{"operation":"refresh","refreshType":"soft"}`, http.StatusBadRequest},
	} {
		if a := call(t, http.MethodPost, u, r.tokens["root"], []byte(tc.body)); a.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.body, a.status, a.body, tc.status)
		}
	}
}
