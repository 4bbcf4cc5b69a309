package root

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestLoginPageNamesArgosyCommands renders the dashboard's login page and
// finds each argosy command it tells the reader to run in this binary's
// command tree (argosy-hub's are held in that binary's package).
func TestLoginPageNamesArgosyCommands(t *testing.T) {
	h, err := web.New(readtest.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.LoginPage(rec, httptest.NewRequest(http.MethodGet, "/login", nil), http.StatusOK, "/", "", false)
	named := regexp.MustCompile(`<code>(argosy [^<]+)</code>`).FindAllStringSubmatch(rec.Body.String(), -1)
	if len(named) == 0 {
		t.Fatalf("the login page names no argosy command:\n%s", rec.Body.String())
	}
	root := NewRoot(cmdkit.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	for _, n := range named {
		c, rest, err := root.Find(strings.Fields(n[1])[1:])
		if err != nil || len(rest) > 0 || c.CommandPath() != n[1] {
			t.Errorf("the login page names %q, which argosy does not have (found %q, left %v, %v)", n[1], c.CommandPath(), rest, err)
		}
	}
}
