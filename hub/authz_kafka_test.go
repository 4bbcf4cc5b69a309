//go:build integration

package hub_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/hub/auth"
)

// authzRow is one row of docs/hub.md's authorization table.
type authzRow struct {
	route, action, least string
}

// authzTable reads the authorization table of docs/hub.md, between its
// markers, by route ("METHOD PATH").
func authzTable(t *testing.T) map[string]authzRow {
	t.Helper()
	b, err := os.ReadFile("../docs/hub.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- authorization-table -->")
	table, _, ok2 := strings.Cut(rest, "<!-- /authorization-table -->")
	if !ok || !ok2 {
		t.Fatal("docs/hub.md has no authorization table between its markers")
	}
	out := map[string]authzRow{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 5 {
			t.Fatalf("authorization table row %q: want 5 cells", line)
		}
		row := authzRow{route: strings.Trim(strings.TrimPrefix(cells[0], "| "), "`"), action: cells[1], least: cells[2]}
		if strings.HasPrefix(row.least, "none") {
			row.least = "none"
		}
		if !slices.Contains([]string{"none", auth.RoleViewer, auth.RoleDeployer, auth.RoleAdmin}, row.least) {
			t.Fatalf("authorization table row %q: least role %q", line, row.least)
		}
		if _, dup := out[row.route]; dup {
			t.Fatalf("authorization table: %s twice", row.route)
		}
		out[row.route] = row
	}
	return out
}

// TestAuthorizationTable holds docs/hub.md's authorization table to the
// served document and the hub's behaviour: every operation of
// /openapi.json has a row and every row an operation, so that a new route
// without a rule fails the build; and every operation, called with a
// token of each role, is refused (403) exactly for the roles below the
// row's least role. The limit columns are held by TestScopeEscapes and
// TestReadsStayInScope.
func TestAuthorizationTable(t *testing.T) {
	rows := authzTable(t)
	doc := openAPIDoc(t)
	ops := operations(doc)
	seen := map[string]bool{}
	for _, o := range ops {
		seen[o.String()] = true
		if _, ok := rows[o.String()]; !ok {
			t.Errorf("%s has no row in docs/hub.md's authorization table", o)
		}
	}
	for route := range rows {
		if !seen[route] {
			t.Errorf("docs/hub.md's authorization table has %s, which /openapi.json does not", route)
		}
	}
	if t.Failed() {
		return
	}

	r := newRig(t, 2)
	r.addToken("deployer", auth.RoleDeployer, nil, "")
	base := r.start()
	tokens := map[string]string{auth.RoleViewer: "auditor", auth.RoleDeployer: "deployer", auth.RoleAdmin: "root"}
	rank := map[string]int{"none": 0, auth.RoleViewer: 1, auth.RoleDeployer: 2, auth.RoleAdmin: 3}
	for _, o := range ops {
		row := rows[o.String()]
		t.Run(o.String(), func(t *testing.T) {
			var body []byte
			if _, ok := o.op["requestBody"]; ok {
				body = []byte("{}")
			}
			statuses := map[int]bool{}
			for _, role := range []string{auth.RoleViewer, auth.RoleDeployer, auth.RoleAdmin} {
				a := call(t, strings.ToUpper(o.method), base+target(t, doc, o), r.tokens[tokens[role]], body)
				statuses[a.status] = true
				if row.least == "none" {
					continue
				}
				refused := a.status == http.StatusForbidden || a.status == http.StatusUnauthorized
				if want := rank[role] < rank[row.least]; refused != want {
					t.Errorf("as %s: %d %s; the table says the least role is %s", role, a.status, a.body, row.least)
				}
			}
			// A route that takes no bearer token answers every role alike
			// (the join route checks its join token instead).
			if row.least == "none" && (len(statuses) != 1 || statuses[http.StatusForbidden]) {
				t.Errorf("answers by role %v, want one answer and no 403", statuses)
			}
		})
	}
}
