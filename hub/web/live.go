package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/argosyproj/argosy/internal/httpserve"
)

// A page keeps itself current over server-sent events: GET /live?path=P
// renders the page P again every liveEvery, as the viewer would get it,
// and sends each of its live regions whose HTML changed, as a patch event
// of {"id", "html"}; app.js swaps it in place. A live region is an element
// with an id and a data-live attribute. With data-live="rows" it is a list
// whose items are live regions too: the list is sent whole when its items
// come or go, and otherwise only the items that changed. Text within a
// data-tick element (an age, which changes every second) does not count
// as a change: app.js keeps it current. A rendered page carries each
// region's version (data-k, a hash of what its change is judged by), and
// the browser opens the stream with the versions it shows (k=id:version,
// …): the stream sends first the regions whose version differs, which
// are those that changed since the page was rendered. It ends after
// liveMaxAge (the browser then opens another, which checks the session
// again) or when the hub stops.
const (
	liveEvery  = time.Second
	liveMaxAge = 5 * time.Minute
	// livePing is how often a quiet stream sends a comment, so that
	// proxies keep it open.
	livePing = 15 * time.Second
	// liveCost is how many times a render's duration a stream waits, at
	// least, before the next.
	liveCost = 5
)

// region is one live region of a rendered page: key is its version.
type region struct {
	id, key string
	node    *html.Node
	rows    bool
}

// maxShown bounds the versions a stream starts from: beyond it, regions
// are sent again.
const maxShown = 64 << 10

// shown reads the versions the browser shows, "id:version,…".
func shown(k string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(k[:min(len(k), maxShown)], ",") {
		if i := strings.LastIndexByte(kv, ':'); i > 0 {
			out[kv[:i]] = kv[i+1:]
		}
	}
	return out
}

// maxLivePage bounds the pages followed live: a larger one (an audit
// page of large diffs) is not parsed every second; its stream ends at
// once, and the page stays as it was rendered.
const maxLivePage = 1 << 20

// withVersions adds to each live region of the page b its version
// (data-k), the one its live stream compares, leaving the rest of the
// page byte for byte as it was; a page over maxLivePage is left as it is.
func withVersions(b []byte) ([]byte, error) {
	if len(b) > maxLivePage {
		return b, nil
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing the page: %w", err)
	}
	versions := map[string]string{}
	for _, rg := range liveRegionsOf(doc) {
		versions[rg.id] = rg.key
	}
	// Each region's start tag ends at a '>' the tokenizer finds: the
	// version goes just before it.
	type insert struct {
		at int
		v  string
	}
	var ins []insert
	z := html.NewTokenizer(bytes.NewReader(b))
	for at := 0; ; {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		raw := z.Raw()
		at += len(raw)
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		t := z.Token()
		n := &html.Node{Type: html.ElementNode, Attr: t.Attr}
		if id, _, ok := liveAttrs(n); ok && versions[id] != "" {
			end := at - 1
			if tt == html.SelfClosingTagToken {
				end--
			}
			ins = append(ins, insert{end, versions[id]})
		}
	}
	out := make([]byte, 0, len(b)+len(ins)*24)
	last := 0
	for _, in := range ins {
		out = append(append(out, b[last:in.at]...), ` data-k="`+in.v+`"`...)
		last = in.at
	}
	return append(out, b[last:]...), nil
}

func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	target, err := livePath(r.URL.Query().Get("path"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	fmt.Fprintf(w, "retry: %d\n\n", (3 * time.Second).Milliseconds())
	sent := shown(r.URL.Query().Get("k"))
	end, ping := time.NewTimer(liveMaxAge), time.NewTicker(livePing)
	defer end.Stop()
	defer ping.Stop()
	wait := time.NewTimer(h.liveEvery)
	defer wait.Stop()
	for {
		start := time.Now()
		regions, status := h.liveRegions(r, target)
		// A page that takes long to render (one Application on 10,000
		// clusters) is rendered less often: a stream spends at most a
		// fifth of its time rendering.
		wait.Reset(max(h.liveEvery, liveCost*time.Since(start)))
		if status != http.StatusOK {
			fmt.Fprintf(w, "event: gone\ndata: %d\n\n", status)
			rc.Flush() // the stream ends here, however the flush went
			return
		}
		if err := sendChanged(w, regions, sent); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if !liveWait(r, w, rc, wait.C, end.C, ping.C) {
			return
		}
	}
}

// liveWait waits for next, pinging the browser meanwhile; it reports
// false when the stream is to end instead.
func liveWait(r *http.Request, w http.ResponseWriter, rc *http.ResponseController, next, end, ping <-chan time.Time) bool {
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-httpserve.Stopping(r.Context()):
			return false
		case <-end:
			return false
		case <-ping:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return false
			}
		case <-next:
			return true
		}
	}
}

// livePath is the page a stream follows: a path of this server, with its
// query, and not the stream itself.
func livePath(p string) (*url.URL, error) {
	u, err := url.Parse(p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("path %q: %w", p, err)
	case u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//"):
		return nil, fmt.Errorf("path %q: want a page of this dashboard, as /apps?state=Failed", p)
	case u.Path == "/live" || strings.HasPrefix(u.Path, "/static/") || strings.HasPrefix(u.Path, "/reports/deployments."):
		return nil, fmt.Errorf("path %q is not a page", p)
	}
	return &url.URL{Path: u.Path, RawQuery: u.RawQuery}, nil
}

// liveRegions renders the page at target for r's viewer and returns its
// live regions in document order, with the page's status.
func (h *Handler) liveRegions(r *http.Request, target *url.URL) ([]region, int) {
	// The page is parsed here: render leaves the versions to this parse
	// rather than parse it a first time to insert them.
	req := r.Clone(context.WithValue(r.Context(), streamKey{}, true))
	req.Method, req.URL, req.RequestURI = http.MethodGet, target, target.RequestURI()
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.mux.ServeHTTP(rec, req)
	switch {
	case rec.status != http.StatusOK:
		return nil, rec.status
	case rec.body.Len() > maxLivePage:
		return nil, http.StatusRequestEntityTooLarge
	}
	doc, err := html.Parse(&rec.body)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	regions := liveRegionsOf(doc)
	// What is sent carries its version, which the browser opens its next
	// stream with.
	for _, rg := range regions {
		rg.node.Attr = append(rg.node.Attr, html.Attribute{Key: "data-k", Val: rg.key})
	}
	return regions, http.StatusOK
}

// streamKey marks the context of a page rendered for a live stream.
type streamKey struct{}

// forStream reports whether ctx is that of a page rendered for a live
// stream, whose versions the stream adds itself.
func forStream(ctx context.Context) bool { return ctx.Value(streamKey{}) != nil }

// liveRegionsOf returns the live regions of doc in document order, each
// with its version.
func liveRegionsOf(doc *html.Node) []region {
	var out []region
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if id, live, ok := liveAttrs(n); ok {
				rg := region{id: id, node: n, rows: live == "rows"}
				rg.key = version(regionKey(n, rg.rows))
				out = append(out, rg)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// version is a region's key in brief.
func version(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key)) // a hash does not fail
	return strconv.FormatUint(h.Sum64(), 36)
}

// liveAttrs returns n's id and data-live, ok if it has both.
func liveAttrs(n *html.Node) (id, live string, ok bool) {
	var hasLive bool
	for _, a := range n.Attr {
		switch a.Key {
		case "id":
			id = a.Val
		case "data-live":
			live, hasLive = a.Val, true
		}
	}
	return id, live, id != "" && hasLive
}

// regionKey is what a region's change is judged by: a list's item ids,
// or the region's HTML without the text of its data-tick elements.
func regionKey(n *html.Node, rows bool) string {
	var b strings.Builder
	if rows {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if id, _, ok := liveAttrs(c); ok && c.Type == html.ElementNode {
				b.WriteString(id)
				b.WriteByte(0)
			}
		}
		return b.String()
	}
	html.Render(&b, withoutTicks(n)) //nolint:errcheck // a strings.Builder does not fail
	return b.String()
}

// withoutTicks is a copy of n with the children of its data-tick elements
// and the versions of its regions (data-k) left out.
func withoutTicks(n *html.Node) *html.Node {
	attrs := slices.DeleteFunc(slices.Clone(n.Attr), func(a html.Attribute) bool { return a.Key == "data-k" })
	c := &html.Node{Type: n.Type, DataAtom: n.DataAtom, Data: n.Data, Namespace: n.Namespace, Attr: attrs}
	for _, a := range n.Attr {
		if a.Key == "data-tick" {
			return c
		}
	}
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		c.AppendChild(withoutTicks(k))
	}
	return c
}

// sendChanged writes a patch event for each region whose key is not the
// one last sent, and notes what it sent: a list sent whole carries its
// items, which are then not sent again.
func sendChanged(w http.ResponseWriter, regions []region, sent map[string]string) error {
	var whole []*html.Node
	for _, rg := range regions {
		if sent[rg.id] == rg.key {
			continue
		}
		sent[rg.id] = rg.key
		if within(rg.node, whole) {
			continue
		}
		var b bytes.Buffer
		if err := html.Render(&b, rg.node); err != nil {
			return fmt.Errorf("rendering region %s: %w", rg.id, err)
		}
		data, err := json.Marshal(map[string]string{"id": rg.id, "html": b.String()})
		if err != nil {
			return fmt.Errorf("encoding region %s: %w", rg.id, err)
		}
		if _, err := fmt.Fprintf(w, "event: patch\ndata: %s\n\n", data); err != nil {
			return fmt.Errorf("sending region %s: %w", rg.id, err)
		}
		whole = append(whole, rg.node)
	}
	return nil
}

// within reports whether n is inside one of the nodes of outer.
func within(n *html.Node, outer []*html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		for _, o := range outer {
			if p == o {
				return true
			}
		}
	}
	return false
}

// recorder is the response of a page rendered for a live stream.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header         { return rec.header }
func (rec *recorder) WriteHeader(status int)      { rec.status = status }
func (rec *recorder) Write(b []byte) (int, error) { return rec.body.Write(b) }
