package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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
// as a change: app.js keeps it current. A stream sends every region once
// when it starts, since the page may have changed since it was rendered,
// and ends after liveMaxAge (the browser then opens another, which checks
// the session again) or when the hub stops.
const (
	liveEvery  = time.Second
	liveMaxAge = 5 * time.Minute
	// livePing is how often a quiet stream sends a comment, so that
	// proxies keep it open.
	livePing = 15 * time.Second
)

// region is one live region of a rendered page.
type region struct {
	id, key string
	node    *html.Node
	rows    bool
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
	sent := map[string]string{}
	end, ping := time.NewTimer(liveMaxAge), time.NewTicker(livePing)
	defer end.Stop()
	defer ping.Stop()
	tick := time.NewTicker(h.liveEvery)
	defer tick.Stop()
	for {
		regions, status := h.liveRegions(r, target)
		if status != http.StatusOK {
			fmt.Fprintf(w, "event: gone\ndata: %d\n\n", status)
			rc.Flush() //nolint:errcheck // the stream ends here
			return
		}
		if err := sendChanged(w, regions, sent); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-httpserve.Stopping(r.Context()):
			return
		case <-end.C:
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		case <-tick.C:
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
	req := r.Clone(r.Context())
	req.Method, req.URL, req.RequestURI = http.MethodGet, target, target.RequestURI()
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.mux.ServeHTTP(rec, req)
	if rec.status != http.StatusOK {
		return nil, rec.status
	}
	doc, err := html.Parse(&rec.body)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	var out []region
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if id, live, ok := liveAttrs(n); ok {
				rg := region{id: id, node: n, rows: live == "rows"}
				rg.key = regionKey(n, rg.rows)
				out = append(out, rg)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out, http.StatusOK
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
// left out.
func withoutTicks(n *html.Node) *html.Node {
	c := &html.Node{Type: n.Type, DataAtom: n.DataAtom, Data: n.Data, Namespace: n.Namespace, Attr: n.Attr}
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
