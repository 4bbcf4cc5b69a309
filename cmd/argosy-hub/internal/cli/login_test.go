package cli_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestLoginPageNamesHubCommands renders the dashboard's login page and
// finds each argosy-hub command it tells the reader to run in this
// binary's command tree.
func TestLoginPageNamesHubCommands(t *testing.T) {
	h, err := web.New(readtest.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.LoginPage(rec, httptest.NewRequest(http.MethodGet, "/login", nil), http.StatusOK, "/", "", false)
	named := regexp.MustCompile(`<code>(argosy-hub [^<]+)</code>`).FindAllStringSubmatch(rec.Body.String(), -1)
	if len(named) == 0 {
		t.Fatalf("the login page names no argosy-hub command:\n%s", rec.Body.String())
	}
	root := cli.NewRoot(cmdkit.IOStreams{Out: &discard{}, Err: &discard{}})
	for _, n := range named {
		args := strings.Fields(n[1])[1:]
		c, rest, err := root.Find(args)
		if err != nil || len(rest) > 0 || c.CommandPath() != n[1] {
			t.Errorf("the login page names %q, which argosy-hub does not have (found %q, left %v, %v)", n[1], c.CommandPath(), rest, err)
		}
	}
}
