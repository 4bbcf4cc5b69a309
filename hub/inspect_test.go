package hub

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/schemas"
)

// TestLogsQuestion reads a logs question's narrowing from its query, and
// refuses values out of bounds with the field named.
func TestLogsQuestion(t *testing.T) {
	ask := func(query string) (schemas.QueryRequested, error) {
		return questionOf(httptest.NewRequest("GET", "/logs?resourceName=web-1&"+query, nil), schemas.QueryLogs)
	}
	q, err := ask("resourceNamespace=web&container=app&tailLines=50&sinceSeconds=600&timestamps=true")
	if err != nil || q.Target.Name != "web-1" || q.Target.Namespace != "web" || q.Container != "app" ||
		q.TailLines != 50 || q.SinceSeconds != 600 || !q.Timestamps {
		t.Errorf("question %+v, %v", q, err)
	}
	if q, err := ask("timestamps=false"); err != nil || q.Timestamps {
		t.Errorf("timestamps=false: %+v, %v", q, err)
	}
	for query, field := range map[string]string{
		"timestamps=yes":         "timestamps",
		"tailLines=100001":       "tailLines",
		"tailLines=-1":           "tailLines",
		"sinceSeconds=31536001":  "sinceSeconds",
		"sinceSeconds=" + "1e30": "sinceSeconds",
	} {
		_, err := ask(query)
		var e *apiError
		if !errors.As(err, &e) || e.status != 400 || len(e.body.Fields) != 1 || e.body.Fields[0].Field != field ||
			!strings.HasPrefix(e.body.Error, field+": ") {
			t.Errorf("%s: %v, want a 400 naming %s", query, err, field)
		}
	}
}
