package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
)

func TestDecodeBody(t *testing.T) {
	tests := []struct {
		body, field string
		status      int
	}{
		{`{"clusters":["a"],"manifest":{}}`, "", 0},
		{`{"clusters":"a"}`, "clusters", http.StatusBadRequest},
		{`{"cluster":["a"]}`, "cluster", http.StatusBadRequest},
		{`{"clusters":["a"]`, "", http.StatusBadRequest},
		{`{} {}`, "", http.StatusBadRequest},
		{`not json`, "", http.StatusBadRequest},
		{`null`, "", http.StatusBadRequest},
		{` null `, "", http.StatusBadRequest},
		{`{"clusters":["a"],"expectedGeneration":null}`, "expectedGeneration", http.StatusBadRequest},
		{`{"clusters":null}`, "clusters", http.StatusBadRequest},
		{`{"clusters":["a"],"manifest":{"spec":{"x":null}}}`, "", 0},
		{``, "", http.StatusBadRequest},
		// Valid JSON and then anything but whitespace.
		{`{"clusters":["a"]}` + " \r\n\t", "", 0},
		{`{"clusters":["a"]}garbage`, "", http.StatusBadRequest},
		{`{"clusters":["a"]}]]]`, "", http.StatusBadRequest},
		{`{"clusters":["a"]}}` + strings.Repeat("x", 1<<20), "", http.StatusBadRequest},
		{`{"clusters":["a"]}` + strings.Repeat("x", 1<<20), "", http.StatusBadRequest},
		// A field given twice, even in another case, or deep inside.
		{`{"clusters":["a"],"clusters":["a","b"]}`, "clusters", http.StatusBadRequest},
		{`{"clusters":["a"],"Clusters":["b"]}`, "Clusters", http.StatusBadRequest},
		{`{"clusters":["a"],"manifest":{"metadata":{"name":"x","name":"y"}}}`, "manifest.metadata.name", http.StatusBadRequest},
		{`{"clusters":["a"],"manifest":{"spec":{"a":[{"b":1},{"b":1,"b":2}]}}}`, "manifest.spec.a[1].b", http.StatusBadRequest},
		// Nesting: the limit, and one past it.
		// A manifest as deep as validation allows, and one level more.
		{`{"manifest":` + strings.Repeat(`[`, api.MaxDepth) + strings.Repeat(`]`, api.MaxDepth) + `}`, "", 0},
		{`{"manifest":` + strings.Repeat(`[`, api.MaxDepth+1) + strings.Repeat(`]`, api.MaxDepth+1) + `}`, "manifest" + strings.Repeat("[0]", api.MaxDepth), http.StatusBadRequest},
		{strings.Repeat(`[`, 1<<20), "", http.StatusBadRequest},
		// Past the size limit: 413, whatever follows.
		{`{"manifest":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`, "", http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		var req api.ApplyRequest
		err := decodeBody(r, &req)
		var ae *apiError
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%.80s: %v", tc.body, err)
		case tc.status != 0 && (!errors.As(err, &ae) || ae.status != tc.status):
			t.Errorf("%.80s: %v, want %d", tc.body, err, tc.status)
		case tc.field != "" && (len(ae.body.Fields) != 1 || ae.body.Fields[0].Field != tc.field):
			t.Errorf("%.80s: fields %+v, want %s named", tc.body, ae.body.Fields, tc.field)
		}
	}
}

// requestTypes are the request bodies the hub decodes, by route.
var requestTypes = []func() any{
	func() any { return new(api.ApplyRequest) },
	func() any { return new(api.ClusterRequest) },
	func() any { return new(api.JoinRequest) },
	func() any { return new(api.RepositoryRequest) },
	func() any { return new(api.OperationRequest) },
	func() any { return new(api.PlacementRequest) },
}

// FuzzDecodeBody checks that no body makes the request decoder panic for
// any request type, that a refusal stays small and is a 4xx, and that
// what it accepts encodes, decodes again and encodes to the same bytes.
// The seeds are the bodies TestDecodeBody and the hub's API tests send.
func FuzzDecodeBody(f *testing.F) {
	app := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},` +
		`"spec":{"project":"default","source":{"repoURL":"https://git.example/apps.git","path":"web","targetRevision":"main"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`
	seeds := []string{
		`{"clusters":["a"],"manifest":{"kind":"Application"}}`, `{"expectedGeneration":3}`, `{}`, `[]`, `{"clusters":[1]}`,
		`{"clusters":["c1","c2"],"manifest":` + app + `,"adopt":false}`,
		`{"clusters":["c1"],"manifest":` + app + `,"commit":{"revision":"0123456789abcdef0123456789abcdef01234567","committedAt":"2026-01-02T15:04:05Z"}}`,
		`{"labels":{"env":"prod","example.com/tier":"web"},"signingKey":"AAAA","sealingKey":"BBBB","partition":2,"expectedGeneration":0,"keyOverlap":"10m","joinTokenTTL":"24h"}`,
		`{"token":"argosy_join_x","signingKey":"AAAA","sealingKey":"BBBB"}`,
		`{"url":"https://git.example.com/apps.git","type":"git","project":"default","credentials":{"username":"bot","password":"x"}}`,
		`{"url":"https://git.example.com/apps.git","sealed":{"keyId":"k","ciphertext":"Y2lwaGVy"}}`,
		`{"operation":"rollback","historyId":3,"revision":"main","prune":true,"dryRun":true,"refreshType":"hard"}`,
		`{"selector":"env=prod,region in (eu,us)","prune":"orphan","manifest":` + app + `}`,
		`{"clusters":["a"]}]]]`, `{"clusters":["a"],"clusters":["b"]}`, `{"clusters":["a"],"Clusters":["b"]}`,
		`{"manifest":` + strings.Repeat(`[`, api.MaxDepth) + strings.Repeat(`]`, api.MaxDepth) + `}`,
		`{"manifest":{"a":{"b":1,"b":2}}}`, `{"labels":{"a":"1","a":"2"}}`, `"x"`, `null`, `{"clusters":null}`,
	}
	for _, s := range seeds {
		for kind := range requestTypes {
			f.Add(uint8(kind), s)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body string) {
		newReq := requestTypes[int(kind)%len(requestTypes)]
		req := newReq()
		start := time.Now()
		err := decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), req)
		// Linear in the body: the fuzzer's bodies are small, so a
		// second is far past what any of them may take.
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%T: %s to decode %d bytes", req, d, len(body))
		}
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status >= 500 {
				t.Fatalf("%T: %v, want a 4xx", req, err)
			}
			if n := len(ae.body.Error); n > 2048 {
				t.Fatalf("%T: a %d-byte error: %.200s", req, n, ae.body.Error)
			}
			return
		}
		b, err := jsonMarshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again := newReq()
		if err := decodeBody(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(withoutNulls(t, b))), again); err != nil {
			t.Fatalf("re-decoding %s into %T: %v", b, again, err)
		}
		b2, err := jsonMarshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("%T does not round-trip:\n%s\n%s", req, b, b2)
		}
	})
}

func TestGenerationFor(t *testing.T) {
	g := func(n int64) *int64 { return &n }
	tests := []struct {
		expected *int64
		cur      entry
		exists   bool
		next     int64
		conflict bool
	}{
		{nil, entry{}, false, 1, false},
		{g(0), entry{}, false, 1, false},
		{g(1), entry{}, false, 0, true},
		{nil, entry{generation: 4}, true, 5, false},
		{g(4), entry{generation: 4}, true, 5, false},
		{g(3), entry{generation: 4}, true, 0, true},
		{g(0), entry{generation: 4}, true, 0, true},
		{g(0), entry{generation: 4, deleted: true}, true, 5, false}, // re-created after a delete
	}
	for _, tc := range tests {
		next, err := generationFor(tc.expected, tc.cur, tc.exists, "x")
		var ae *apiError
		if tc.conflict != (errors.As(err, &ae) && ae.status == http.StatusConflict) || (!tc.conflict && next != tc.next) {
			t.Errorf("%+v: %d, %v; want %d, conflict %v", tc, next, err, tc.next, tc.conflict)
		}
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// withoutNulls drops the members of an encoded request that are null (a
// field it left out, encoded as null), which the decoder refuses.
func withoutNulls(t *testing.T, b []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIfMatch holds If-Match to its pattern in openapi.yaml: a header
// present but empty, or with anything but a whole number of at most 18
// digits, bare or in one pair of quotes, is a 400, never taken as absent.
func TestIfMatch(t *testing.T) {
	for _, tc := range []struct {
		header []string // nil: no If-Match
		want   int64    // -1: absent
		bad    bool
	}{
		{header: nil, want: -1},
		{header: []string{`"3"`}, want: 3},
		{header: []string{`3`}, want: 3},
		{header: []string{`"0"`}, want: 0},
		{header: []string{`999999999999999999`}, want: 999999999999999999},
		{header: []string{``}, bad: true},
		{header: []string{`""`}, bad: true},
		{header: []string{`"3`}, bad: true},
		{header: []string{`3"`}, bad: true},
		{header: []string{`""3""`}, bad: true},
		{header: []string{`+3`}, bad: true},
		{header: []string{`-0`}, bad: true},
		{header: []string{`1000000000000000000`}, bad: true},
		{header: []string{`"3"`, `"4"`}, bad: true},
	} {
		r := httptest.NewRequest(http.MethodDelete, "/", nil)
		if tc.header != nil {
			r.Header[api.HeaderIfMatch] = tc.header
		}
		g, err := ifMatch(r)
		var ae *apiError
		switch {
		case tc.bad && (!errors.As(err, &ae) || ae.status != http.StatusBadRequest):
			t.Errorf("If-Match %q: %v, %v, want a 400", tc.header, g, err)
		case tc.bad:
		case err != nil:
			t.Errorf("If-Match %q: %v", tc.header, err)
		case tc.want < 0 && g != nil:
			t.Errorf("no If-Match: %d, want none", *g)
		case tc.want >= 0 && (g == nil || *g != tc.want):
			t.Errorf("If-Match %q: %v, want %d", tc.header, g, tc.want)
		}
	}
}

// TestDecodeBodyWholeNumbers: JSON Schema's integer, which the documents
// give every integer field, takes 3.0 and 1e1; so does the decoder, and
// it still refuses a fraction.
func TestDecodeBodyWholeNumbers(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64 // -1: refused
	}{
		{`{"expectedGeneration":3}`, 3},
		{`{"expectedGeneration":3.0}`, 3},
		{`{"expectedGeneration":1e1}`, 10},
		{`{"expectedGeneration":14424.000}`, 14424},
		{`{"expectedGeneration":2.0E+0}`, 2},
		{`{"expectedGeneration":3.5}`, -1},
		{`{"expectedGeneration":1e-1}`, -1},
		{`{"expectedGeneration":1e999999}`, -1},
		{`{"expectedGeneration":1e30}`, -1},
	} {
		var req api.ApplyRequest
		err := decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body)), &req)
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("%s: taken as %v, want a 400", tc.body, *req.ExpectedGeneration)
		case tc.want >= 0 && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.want >= 0 && (req.ExpectedGeneration == nil || *req.ExpectedGeneration != tc.want):
			t.Errorf("%s: %v, want %d", tc.body, req.ExpectedGeneration, tc.want)
		}
	}
}
