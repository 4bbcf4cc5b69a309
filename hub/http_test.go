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
		{`null`, "", http.StatusBadRequest},
		{` null `, "", http.StatusBadRequest},
		{`{"clusters":["a"],"expectedGeneration":null}`, "expectedGeneration", http.StatusBadRequest},
		{`{"clusters":null}`, "clusters", http.StatusBadRequest},
		{`{"clusters":["a"],"manifest":{"spec":{"x":null}}}`, "", 0},
		{``, "", http.StatusBadRequest},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		var req api.ApplyRequest
		err := decodeBody(r, &req)
		var ae *apiError
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.status != 0 && (!errors.As(err, &ae) || ae.status != tc.status):
			t.Errorf("%s: %v, want %d", tc.body, err, tc.status)
		case tc.field != "" && (len(ae.body.Fields) != 1 || ae.body.Fields[0].Field != tc.field):
			t.Errorf("%s: fields %+v, want %s named", tc.body, ae.body.Fields, tc.field)
		}
	}
}

// FuzzDecodeBody checks that no body makes the request decoder panic, and
// that what it accepts encodes and decodes to the same request. A request
// it accepts without clusters or a manifest, which the hub refuses next,
// encodes them as null, which the decoder refuses: those are not encoded.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"clusters":["a"],"manifest":{"kind":"Application"}}`, `{"expectedGeneration":3}`, `{}`, `[]`, `{"clusters":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req api.ApplyRequest
		if decodeBody(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), &req) != nil || req.Clusters == nil || req.Manifest == nil {
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
