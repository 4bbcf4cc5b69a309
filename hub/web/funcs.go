package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/report"
)

var funcs = template.FuncMap{
	"labels": joinLabels,
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"day": func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return humanAge(now.Sub(t)) + " ago"
	},
	"state": read.StateText,
	"stateClass": func(state string) string {
		return "state-" + strings.ToLower(state)
	},
	"pct": func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"dur": humanAge,
	// freq writes a deployment frequency as `argosy report` does.
	"freq": report.Frequency,
	// secs writes seconds (a float64 or a *float64) as a duration.
	"secs": func(v any) string {
		switch s := v.(type) {
		case float64:
			return humanAge(time.Duration(s * float64(time.Second)))
		case *float64:
			if s != nil {
				return humanAge(time.Duration(*s * float64(time.Second)))
			}
		}
		return "-"
	},
	"short": func(s string) string {
		if len(s) > 7 {
			return s[:7]
		}
		return s
	},
	"link": func(v url.Values, kv ...string) template.URL {
		out := url.Values{}
		for k, vs := range v {
			out[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				out.Del(kv[i])
			} else {
				out.Set(kv[i], kv[i+1])
			}
		}
		return template.URL("?" + out.Encode())
	},
	"add":  func(a, b int) int { return a + b },
	"list": func(s ...string) []string { return s },
	// since is the Unix time ageSeconds before now: what app.js counts
	// an age from.
	"since": func(now time.Time, ageSeconds *int64) int64 { return now.Unix() - *ageSeconds },
	"deref": func(p *int64) int64 { return *p },
	"pairs": pairs,
	// cluster is the cluster of a report group "cluster/namespace/name".
	"cluster": func(group string) string {
		c, _, _ := strings.Cut(group, "/")
		return c
	},
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// humanAge is a duration rounded for people: 45s, 12m, 3h5m, 2d4h.
func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// pair is one count of a status.
type pair struct {
	Key string
	N   int
}

// statusOrder is the order statuses are shown in; others follow by name.
var statusOrder = []string{"Synced", "OutOfSync", "Healthy", "Progressing", "Degraded", "Missing", "Suspended", "Unknown"}

func pairs(m map[string]int) []pair {
	out := make([]pair, 0, len(m))
	for _, k := range statusOrder {
		if n, ok := m[k]; ok {
			out = append(out, pair{k, n})
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(statusOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, pair{k, m[k]})
	}
	return out
}
