package read_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestTimeParamsInRange checks that a time the stores cannot hold as
// nanoseconds since 1970 is a 400 naming the parameter and the range, on
// every endpoint that takes times, and that the range's ends are taken.
func TestTimeParamsInRange(t *testing.T) {
	h := newHandler(readtest.Fleet())
	for _, path := range []string{"/api/v1/audit?", "/api/v1/deployments?", "/api/v1/reports/deployments?by=app&", "/api/v1/reports/rollouts?"} {
		for _, tc := range []struct {
			query, param string
			status       int
		}{
			{"from=1600-01-01T00:00:00Z", "from", http.StatusBadRequest},
			{"from=1677-09-21T00:00:00Z", "from", http.StatusBadRequest},
			{"to=2262-04-12T00:00:00Z", "to", http.StatusBadRequest},
			{"to=9999-12-31T23:59:59Z", "to", http.StatusBadRequest},
			{"from=1678-01-01T00:00:00Z", "", http.StatusOK},
			{"from=1678-01-01T00:00:00Z&to=2262-01-01T00:00:00Z", "", http.StatusOK},
		} {
			rec := get(t, h, http.MethodGet, path+tc.query)
			if rec.Code != tc.status {
				t.Errorf("%s%s: %d, want %d\n%s", path, tc.query, rec.Code, tc.status, rec.Body)
				continue
			}
			if tc.param != "" && (!strings.Contains(rec.Body.String(), `parameter \"`+tc.param+`\"`) || !strings.Contains(rec.Body.String(), "1678-01-01T00:00:00Z to 2262-01-01T00:00:00Z")) {
				t.Errorf("%s%s: %s, want the parameter and the range named", path, tc.query, rec.Body)
			}
		}
	}
}
