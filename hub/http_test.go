package hub

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		{`{"manifest":` + strings.Repeat(`[`, api.MaxDepth-1) + strings.Repeat(`]`, api.MaxDepth-1) + `}`, "", 0},
		{`{"manifest":` + strings.Repeat(`[`, api.MaxDepth) + strings.Repeat(`]`, api.MaxDepth) + `}`, "manifest" + strings.Repeat("[0]", api.MaxDepth-1), http.StatusBadRequest},
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

// FuzzDecodeBody checks that no body makes the request decoder panic, and
// that what it accepts encodes and decodes to the same request.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"clusters":["a"],"manifest":{"kind":"Application"}}`, `{"expectedGeneration":3}`, `{}`, `[]`, `{"clusters":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req api.ApplyRequest
		if decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), &req) != nil {
			return
		}
		b, err := jsonMarshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var again api.ApplyRequest
		if err := decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(b))), &again); err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
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
