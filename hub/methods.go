package hub

import (
	"net/http"
	"slices"
	"strings"

	"github.com/argosyproj/argosy/projector/read"
)

// methods is the table of the methods each path of the hub takes, the
// read API's included when the hub serves it. The mux alone cannot
// answer a wrong method truthfully: the read API's GET /api/v1/ and the
// dashboard's / match every path below them, so that its Allow would name
// GET where only POST is served, and the dashboard's pages would answer
// without one.
type methods struct {
	paths *http.ServeMux      // each path pattern, with no method
	allow map[string][]string // by path pattern: its methods, sorted
}

func newMethods(withRead bool) *methods {
	m := &methods{paths: http.NewServeMux(), allow: map[string][]string{}}
	add := func(method, path string) {
		if _, ok := m.allow[path]; !ok {
			m.paths.Handle(path, http.NotFoundHandler())
		}
		if !slices.Contains(m.allow[path], method) {
			m.allow[path] = append(m.allow[path], method)
			slices.Sort(m.allow[path])
		}
	}
	for _, rt := range routes() {
		add(rt.method, rt.path)
	}
	add(http.MethodPost, "/api/v1/clusters/{name}/join")
	for _, p := range []string{"/openapi.json", "/healthz", "/readyz"} {
		add(http.MethodGet, p)
	}
	if withRead {
		for _, p := range read.Paths() {
			add(http.MethodGet, p)
		}
	}
	return m
}

// refused returns the Allow header's value for a request whose method
// its path does not take, or "" when the method is taken or the path is
// not one of the table's. A path that takes GET takes HEAD.
func (m *methods) refused(r *http.Request) string {
	_, pattern := m.paths.Handler(r)
	allow, ok := m.allow[pattern]
	if !ok {
		return ""
	}
	if slices.Contains(allow, r.Method) || (r.Method == http.MethodHead && slices.Contains(allow, http.MethodGet)) {
		return ""
	}
	if slices.Contains(allow, http.MethodGet) {
		allow = append(slices.Clone(allow), http.MethodHead)
		slices.Sort(allow)
	}
	return strings.Join(allow, ", ")
}

// ServeHTTP serves the API. A method the path does not take is a 405
// whose Allow names those it takes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if allow := s.methods.refused(r); allow != "" {
		w.Header().Set("Allow", allow)
		s.writeError(w, r, failf(http.StatusMethodNotAllowed, "method %s not allowed on %s: %s", r.Method, r.URL.Path, allow))
		return
	}
	s.mux.ServeHTTP(w, r)
}
