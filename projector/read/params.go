package read

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// params reads a request's query parameters. It refuses names the endpoint
// does not know and names given twice, so that a misspelt filter is an error
// rather than a filter silently ignored. The first bad value is kept and
// returned by err, with a message that names the parameter.
type params struct {
	values map[string]string
	bad    error
}

func parseParams(r *http.Request, known ...string) (*params, error) {
	q := r.URL.Query()
	p := &params{values: make(map[string]string, len(q))}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(known, name):
			if len(known) == 0 {
				return nil, badRequest("unknown parameter %q: this endpoint takes none", name)
			}
			return nil, badRequest("unknown parameter %q: want one of %s", name, strings.Join(known, ", "))
		case len(q[name]) > 1:
			return nil, badRequest("parameter %q given %d times: give it once", name, len(q[name]))
		}
		p.values[name] = q[name][0]
	}
	return p, nil
}

func (p *params) fail(err error) {
	if p.bad == nil {
		p.bad = err
	}
}

func (p *params) err() error { return p.bad }

// str returns a parameter's value, "" when absent.
func (p *params) str(name string) string { return p.values[name] }

// time returns an RFC 3339 time parameter, the zero time when absent.
func (p *params) time(name string) time.Time {
	v, ok := p.values[name]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		p.fail(badRequest("parameter %q: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", name, v))
		return time.Time{}
	}
	if t.Before(EarliestTime) || t.After(LatestTime) {
		p.fail(badRequest("parameter %q: %s is outside the times taken, %s to %s", name, v,
			EarliestTime.Format(time.RFC3339), LatestTime.Format(time.RFC3339)))
		return time.Time{}
	}
	return t
}

// EarliestTime and LatestTime bound a time parameter: the stores keep
// times as nanoseconds since 1970 in an int64, which holds 1677-09-21 to
// 2262-04-11, and a time past them would overflow there (a 500) rather
// than be refused here (a 400). The bounds are whole years inside that.
var (
	EarliestTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	LatestTime   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// interval returns the from and to parameters, checking that from is
// before to when both are given.
func (p *params) interval() (from, to time.Time) {
	from, to = p.time("from"), p.time("to")
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		p.fail(badRequest("parameter \"from\" (%s) must be before \"to\" (%s)",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)))
	}
	return from, to
}

// integer returns an integer parameter in [1, hi], def when absent.
func (p *params) integer(name string, def, hi int) int {
	v, ok := p.values[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > hi {
		p.fail(badRequest("parameter %q: %q is not an integer from 1 to %d", name, v, hi))
		return def
	}
	return n
}

// oneOf returns a parameter that must be one of allowed, def when absent.
func (p *params) oneOf(name, def string, allowed []string) string {
	v, ok := p.values[name]
	if !ok {
		return def
	}
	if !slices.Contains(allowed, v) {
		p.fail(badRequest("parameter %q: %q is not one of %s", name, v, strings.Join(allowed, ", ")))
		return def
	}
	return v
}

// required checks that a parameter is present and not empty.
func (p *params) required(name string) {
	if p.values[name] == "" {
		p.fail(badRequest("parameter %q is required", name))
	}
}
