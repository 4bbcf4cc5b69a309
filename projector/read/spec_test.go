package read_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

func TestDepth(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{``, 0},
		{`1`, 0},
		{`"{[{["`, 0},
		{`{}`, 1},
		{`[[],{}]`, 2},
		{`{"a":{"b":[1,{"c":"]}\"{{"}]}}`, 4},
		{`{"a\\":"{"}`, 1},
		{string(readtest.DeepSpec(readtest.DeepLevels)), readtest.DeepLevels + 3},
		{string(readtest.WideSpec(4096, 12)), 12},
	}
	for _, tt := range tests {
		if got := read.Depth([]byte(tt.in)); got != tt.want {
			t.Errorf("Depth(%.40q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// FuzzDepth holds Depth, which counts brackets, to the nesting a JSON
// decoder finds, and Bound to its promise: what it returns is the input,
// or a marker that Omitted reads back with the input's depth and size.
func FuzzDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[1,[2,[3]]]`, `{"a":"]\"}","b":{"c":[]}}`, `"x"`, `{"a\\":{}}`,
		string(readtest.DeepSpec(120)), string(readtest.WideSpec(2048, 8))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want := tokenDepth(t, raw)
		if got := read.Depth(raw); got != want {
			t.Fatalf("Depth(%q) = %d, the decoder's %d", raw, got, want)
		}
		b := read.Bound(raw)
		o, omitted := read.Omitted(b)
		switch {
		case want > read.MaxSpecDepth || len(raw) > read.MaxSpecBytes:
			if !omitted || o.Depth != want || o.Bytes != len(raw) {
				t.Fatalf("Bound(%q) = %s: want a marker of depth %d, %d bytes", raw, b, want, len(raw))
			}
		case string(b) != string(raw):
			t.Fatalf("Bound(%q) = %s, want it unchanged", raw, b)
		}
	})
}

// tokenDepth is the deepest nesting a JSON decoder reads in raw.
func tokenDepth(t *testing.T, raw []byte) int {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return deepest
		}
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// TestAnswersLeaveOutHostileSpecs: an answer that holds a spec too deep
// for a JSON decoder, or larger than an answer carries, decodes, with a
// marker in the spec's place that says how deep and large it is; every
// other spec is as stored.
func TestAnswersLeaveOutHostileSpecs(t *testing.T) {
	q := readtest.Hostile()
	deep, wide := readtest.DeepSpec(readtest.DeepLevels), readtest.WideSpec(readtest.HugeSpecBytes, 8)
	srv := httptest.NewServer(newHandler(q))
	defer srv.Close()
	c := testClient{srv}
	deepMark := read.OmittedSpec{Reason: read.OmittedDepth, Depth: readtest.DeepLevels + 3, Bytes: len(deep)}
	wideMark := read.OmittedSpec{Reason: read.OmittedSize, Depth: 8, Bytes: len(wide)}
	marker := func(raw json.RawMessage) read.OmittedSpec {
		o, _ := read.Omitted(raw)
		return o
	}

	rows, err := c.Audit(t.Context(), projector.AuditFilter{})
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	for _, r := range rows {
		if r.EventID != "ev-guestbook" {
			continue
		}
		if diff := cmp.Diff([]read.OmittedSpec{wideMark, deepMark}, []read.OmittedSpec{marker(r.Before), marker(r.After)}); diff != "" {
			t.Errorf("the audit entry's before and after (-want +got):\n%s", diff)
		}
	}

	apps, err := c.Apps(t.Context(), projector.AppFilter{Cluster: "prod-eu"})
	if err != nil || len(apps) != 2 {
		t.Fatalf("Apps: %d, %v", len(apps), err)
	}
	if got := marker(apps[1].Desired.Spec); got != deepMark {
		t.Errorf("guestbook's desired spec: %s, want the marker %+v", apps[1].Desired.Spec, deepMark)
	}
	if got := marker(apps[0].Observed.Local.Spec); got != deepMark {
		t.Errorf("billing's published spec: %s, want the marker %+v", apps[0].Observed.Local.Spec, deepMark)
	}
	if _, omitted := read.Omitted(apps[0].Desired.Spec); omitted || len(apps[0].Desired.Spec) == 0 {
		t.Errorf("billing's desired spec %s: want it as stored", apps[0].Desired.Spec)
	}
	// The store's rows are as they were: the answer changed copies.
	if string(q.AppRows[0].Desired.Spec) != string(deep) || string(q.AppRows[1].Observed.Local.Spec) != string(deep) {
		t.Error("answering changed the store's rows")
	}
}

// TestAnswerBoundsItsSpecs: an audit answer of many large specs, each
// within the limits, carries them until they reach MaxAnswerSpecBytes
// together, and markers for the rest.
func TestAnswerBoundsItsSpecs(t *testing.T) {
	q := readtest.Fleet()
	spec := readtest.WideSpec(600<<10, 8)
	row := q.AuditRows[1]
	row.Before, row.After = spec, spec
	for i := range 40 {
		row.Offset++
		row.At = row.At.Add(-time.Second)
		row.EventID = fmt.Sprintf("ev-%d", i)
		q.AuditRows = append(q.AuditRows, row)
	}
	srv := httptest.NewServer(newHandler(q))
	defer srv.Close()
	c := testClient{srv}
	rows, err := c.Audit(t.Context(), projector.AuditFilter{Limit: read.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	carried, left := 0, 0
	for _, r := range rows {
		for _, raw := range []json.RawMessage{r.Before, r.After} {
			if o, ok := read.Omitted(raw); ok {
				if o.Reason != read.OmittedAnswer || o.Bytes != len(spec) {
					t.Errorf("a marker %+v, want one of the answer's for %d bytes", o, len(spec))
				}
				left++
				continue
			}
			carried += len(raw)
		}
	}
	if carried > read.MaxAnswerSpecBytes || carried < read.MaxAnswerSpecBytes-2*len(spec) || left == 0 {
		t.Errorf("the answer carries %d bytes of specs and leaves %d out: want up to %d, and some left out",
			carried, left, read.MaxAnswerSpecBytes)
	}
}

// TestAnswerPassesTheStoresMarkers: a marker the store put in place of a
// spec it left out unread is answered as it is, and spends nothing of
// the answer's budget: an answer of a thousand such markers and then
// exactly MaxAnswerSpecBytes of specs carries every one of the specs.
func TestAnswerPassesTheStoresMarkers(t *testing.T) {
	q := readtest.Fleet()
	q.AuditRows = q.AuditRows[:1]
	row := q.AuditRows[0]
	marker := projector.Marker(projector.OmittedSpec{Reason: projector.OmittedSize, Bytes: 3 << 20})
	spec := json.RawMessage(`{"p":"` + strings.Repeat("x", read.MaxSpecBytes-8) + `"}`)
	for i := range 500 + read.MaxAnswerSpecBytes/read.MaxSpecBytes/2 {
		row.Offset++
		row.At = row.At.Add(-time.Second)
		row.EventID = fmt.Sprintf("ev-%d", i)
		row.Before, row.After = marker, marker
		if i >= 500 {
			row.Before, row.After = spec, spec
		}
		q.AuditRows = append(q.AuditRows, row)
	}
	srv := httptest.NewServer(newHandler(q))
	defer srv.Close()
	c := testClient{srv}
	rows, err := c.Audit(t.Context(), projector.AuditFilter{Limit: read.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	markers, carried := 0, 0
	for _, r := range rows[1:] {
		for _, raw := range []json.RawMessage{r.Before, r.After} {
			if o, ok := read.Omitted(raw); ok {
				if o.Reason == read.OmittedSize && o.Bytes == 3<<20 {
					markers++
				}
				continue
			}
			carried += len(raw)
		}
	}
	if markers != 1000 || carried != read.MaxAnswerSpecBytes {
		t.Errorf("the answer carries %d of the store's markers and %d bytes of specs, want 1000 and %d",
			markers, carried, read.MaxAnswerSpecBytes)
	}
}

// testClient reads the read API srv serves as the client in hub/api does,
// which the tests of this package may not link (the hub sits above it).
type testClient struct{ srv *httptest.Server }

func (c testClient) Audit(ctx context.Context, f projector.AuditFilter) ([]projector.AuditRow, error) {
	q := url.Values{}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	l, err := readtest.Get[read.List[projector.AuditRow]](ctx, c.srv.Client(), c.srv.URL+"/api/v1/audit?"+q.Encode())
	return l.Items, err
}

func (c testClient) Apps(ctx context.Context, f projector.AppFilter) ([]read.App, error) {
	path := "/api/v1/applications"
	if f.Cluster != "" {
		path = "/api/v1/clusters/" + url.PathEscape(f.Cluster) + "/applications"
	}
	l, err := readtest.Get[read.List[read.App]](ctx, c.srv.Client(), c.srv.URL+path)
	return l.Items, err
}
