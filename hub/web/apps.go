package web

import (
	"math"
	"net/http"
	"net/url"

	"github.com/argosyproj/argosy/projector/read"
)

// appsData is the Applications page's.
type appsData struct {
	read.AppsPage
	Req    read.AppsRequest
	States []string
	// Query is the request's filters, for links that keep them.
	Query url.Values
}

// appsParams are the Applications page's query parameters, as
// read.AppsRequest's fields.
var appsParams = []string{"q", "project", "selector", "sync", "health", "state", "grid", "per"}

func (h *Handler) apps(r *http.Request) (string, any, error) {
	q := r.URL.Query()
	req := read.AppsRequest{Search: q.Get("q"), Project: q.Get("project"), Selector: q.Get("selector"),
		Sync: q.Get("sync"), Health: q.Get("health"), State: q.Get("state"), GridBy: q.Get("grid")}
	var err error
	if req.Page, err = intParam(r, "page", 1, math.MaxInt); err != nil {
		return "", nil, err
	}
	if req.PerPage, err = intParam(r, "per", read.DefaultPerPage, read.MaxPerPage); err != nil {
		return "", nil, err
	}
	p, err := read.ListApps(r.Context(), h.q, req, h.now(), h.heartbeat)
	if err != nil {
		return "", nil, err
	}
	keep := url.Values{}
	for _, k := range appsParams {
		if v := q.Get(k); v != "" {
			keep.Set(k, v)
		}
	}
	return "apps", appsData{AppsPage: p, Req: req, States: append(append([]string{}, read.AppStates...), read.AppNotConverged), Query: keep}, nil
}
