package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestLimitsAgree holds the readers' limit on a spec's depth to the hub's
// on what it accepts: the hub must never accept a spec its own readers
// leave out.
func TestLimitsAgree(t *testing.T) {
	if read.MaxSpecDepth != api.MaxDepth {
		t.Errorf("read.MaxSpecDepth is %d, api.MaxDepth %d: want them equal", read.MaxSpecDepth, api.MaxDepth)
	}
}

// auditPage returns the dashboard over readtest.Fleet with the change of
// its audit entry ev-guestbook made from before to after.
func auditPage(t testing.TB, before, after json.RawMessage) *web.Handler {
	t.Helper()
	q := readtest.Fleet()
	for i, r := range q.AuditRows {
		if r.EventID == "ev-guestbook" {
			q.AuditRows[i].Before, q.AuditRows[i].After = before, after
		}
	}
	h, err := web.New(q, web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serveAudit serves the audit page once and returns its body.
func serveAudit(t testing.TB, h *web.Handler) string {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/audit", http.NoBody)
	req = req.WithContext(web.WithViewer(req.Context(), web.Viewer{Actor: "alice", Role: "viewer"}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /audit: %d\n%.2000s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// render serves the audit page once and returns its body and the bytes
// allocated while it was served.
func render(t testing.TB, h *web.Handler) (string, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body := serveAudit(t, h)
	runtime.ReadMemStats(&after)
	return body, after.TotalAlloc - before.TotalAlloc
}

// TestAuditDiffOfHostileSpecs renders the audit page with a change to the
// deepest spec the hub ever accepted (9,995 levels of Helm values: the
// diff indented it into 200 MB) and to a spec of 500 KiB as deep as the
// hub allows throughout, and wants the page to say the change is too deep
// or too large to show, with its size, having allocated less than ten
// times the specs. A small change is still shown line by line.
func TestAuditDiffOfHostileSpecs(t *testing.T) {
	small := json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example/web.git","targetRevision":"v1"}}`)
	tests := []struct {
		name          string
		before, after json.RawMessage
		want          []string
		unwanted      []string
	}{
		{"deep", small, readtest.DeepSpec(readtest.DeepLevels),
			[]string{"Too deep to show: the spec after the change nests 9,998 levels (58.7 KiB); the dashboard shows specs up to 100 levels deep."},
			[]string{`&#34;v&#34;`}},
		{"large", readtest.WideSpec(500<<10, read.MaxSpecDepth-1), readtest.WideSpec(490<<10, read.MaxSpecDepth-1),
			[]string{"Too large to show: the spec before the change is 499.6 KiB, 17.1 MiB indented, and the spec after the change is 489.9 KiB, 16.8 MiB indented; the dashboard shows specs up to 256.0 KiB indented."},
			[]string{`k000001`}},
		{"small", small, json.RawMessage(strings.Replace(string(small), "v1", "v2", 1)),
			[]string{`<span class="ddel">-     &#34;targetRevision&#34;: &#34;v1&#34;</span>`,
				`<span class="dadd">+     &#34;targetRevision&#34;: &#34;v2&#34;</span>`, `<span class="d">      &#34;repoURL&#34;`},
			[]string{"to show"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := auditPage(t, tt.before, tt.after)
			render(t, h) // the first render parses what later ones reuse
			body, allocated := render(t, h)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range tt.unwanted {
				if strings.Contains(body, w) {
					t.Errorf("the page has %q", w)
				}
			}
			in := uint64(len(tt.before) + len(tt.after))
			if tt.name != "small" && allocated > 10*in {
				t.Errorf("rendering the page allocated %d bytes for specs of %d: want under 10 times", allocated, in)
			}
			t.Logf("specs of %d bytes, page of %d, %d bytes allocated", in, len(body), allocated)
		})
	}
}

// TestAuditPageBoundsItsDiffs: a page of many changes, each small enough
// to diff, diffs them until they fill what one page shows, and says of
// the rest that they are not shown and why.
func TestAuditPageBoundsItsDiffs(t *testing.T) {
	after := readtest.WideSpec(60<<10, 6)
	before := json.RawMessage(strings.ReplaceAll(string(after), `"v"`, `"w"`))
	q := readtest.Fleet()
	row := q.AuditRows[1]
	row.Before, row.After = before, after
	for i := range 200 {
		row.Offset++
		row.At = row.At.Add(-time.Second)
		row.EventID = fmt.Sprintf("ev-%d", i)
		q.AuditRows = append(q.AuditRows, row)
	}
	h, err := web.New(q, web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/audit?limit=1000", http.NoBody)
	req = req.WithContext(web.WithViewer(req.Context(), web.Viewer{Actor: "alice", Role: "viewer"}))
	var before0, after0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before0)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after0)
	body := rec.Body.String()
	shown, hidden := strings.Count(body, `<pre class="diff">`), strings.Count(body, "fill what one page shows (4.0 MiB)")
	if rec.Code != http.StatusOK || shown < 3 || hidden < 150 || shown+hidden < 200 {
		t.Errorf("%d: %d changes shown, %d not shown for the page's bound: want some of each, 200 in all", rec.Code, shown, hidden)
	}
	allocated := after0.TotalAlloc - before0.TotalAlloc
	t.Logf("%d changes shown, %d not; a page of %d bytes, %d bytes allocated", shown, hidden, len(body), allocated)
	if len(body) > 8<<20 || allocated > 96<<20 {
		t.Errorf("a page of %d bytes, %d bytes allocated: want under 8 MiB and 96 MiB", len(body), allocated)
	}
	// A page this large is not followed live: its stream ends at once.
	live := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/live?path="+url.QueryEscape("/audit?limit=1000"), http.NoBody)
	live = live.WithContext(web.WithViewer(live.Context(), web.Viewer{Actor: "alice", Role: "viewer"}))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, live)
	if !strings.Contains(rec.Body.String(), "event: gone\ndata: 413\n") || strings.Contains(body, "data-k=") {
		t.Errorf("a page of %d bytes is versioned, or followed live:\n%.300s", len(body), rec.Body.String())
	}
}

// TestAuditPageSaysWhatTheStoreLeftOut: a spec the store left out unread,
// with a marker in its place, is not diffed as if the marker were the
// spec: the page says why it is not shown, with the spec's size.
func TestAuditPageSaysWhatTheStoreLeftOut(t *testing.T) {
	small := json.RawMessage(`{"project":"default"}`)
	tests := []struct {
		name          string
		before, after json.RawMessage
		want          string
	}{
		{"size", small, projector.Marker(projector.OmittedSpec{Reason: projector.OmittedSize, Bytes: 3 << 20}),
			"Too large to show: the spec after the change is 3.0 MiB; the dashboard reads specs up to 1.0 MiB."},
		{"answer", projector.Marker(projector.OmittedSpec{Reason: projector.OmittedAnswer, Bytes: 600 << 10}), small,
			"Not shown: the spec before the change is 600.0 KiB, and the changes above it fill what one page reads (16.0 MiB of specs)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := serveAudit(t, auditPage(t, tt.before, tt.after))
			if !strings.Contains(body, tt.want) {
				t.Errorf("the page lacks %q", tt.want)
			}
			if strings.Contains(body, "$omitted") {
				t.Errorf("the page shows the marker")
			}
		})
	}
}
