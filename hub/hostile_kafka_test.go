//go:build integration

package hub_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// hostile is one request the hub must refuse with a 4xx that names what
// is wrong.
type hostile struct {
	name, method, path, body string
	status                   int
	// field is the field the answer names, if any; text a substring of
	// its error.
	field, text string
}

// send sends one request with actor's token and returns its status and
// its error body.
func (r *rig) send(url, actor, method, path, body string) (int, api.Error) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), method, url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.tokens[actor])
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %.80s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	var e api.Error
	if res.StatusCode >= 400 {
		if err := json.Unmarshal(b, &e); err != nil {
			r.t.Errorf("%s %.80s: %d with a body that is no error: %.200s", method, path, res.StatusCode, b)
		}
	}
	return res.StatusCode, e
}

// refuse sends each request, checks its answer, and then that none wrote
// to the config topic and each was audited as failed with its status.
func (r *rig) refuse(url string, cases []hostile) {
	t := r.t
	before := len(r.records(events.TopicConfig))
	auditBefore := len(r.records(events.TopicAudit))
	for _, tc := range cases {
		status, e := r.send(url, "root", tc.method, tc.path, tc.body)
		if status != tc.status {
			t.Errorf("%s: %d %+v, want %d", tc.name, status, e, tc.status)
			continue
		}
		if tc.field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != tc.field) {
			t.Errorf("%s: fields %+v, want %q named", tc.name, e.Fields, tc.field)
		}
		if !strings.Contains(e.Error, tc.text) {
			t.Errorf("%s: error %q, want it to say %q", tc.name, e.Error, tc.text)
		}
	}
	if n := len(r.records(events.TopicConfig)); n != before {
		t.Errorf("the config topic went from %d to %d records: a refused request wrote", before, n)
	}
	type row struct {
		method, path, outcome string
		status                int
	}
	audited := map[row]int{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)[auditBefore:]), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		audited[row{a.Method, a.Path, a.Outcome, a.StatusCode}]++
		if b, _ := json.Marshal(a); bytes.Contains(b, []byte("PASSWORD")) {
			t.Errorf("an audit record holds the password: %s", b)
		}
	}
	for _, tc := range cases {
		path, _, _ := strings.Cut(tc.path, "?") // the audit record holds the path alone
		k := row{tc.method, path, "failed", tc.status}
		if audited[k] == 0 {
			t.Errorf("%s: no audit record of %s %.80s failed with %d", tc.name, tc.method, tc.path, tc.status)
			continue
		}
		audited[k]--
	}
}

// deep returns a JSON value nested n arrays deep.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestHostileBodies sends bodies past each limit of the hub's decoding to
// every route that reads one, on the real broker: each is a 4xx naming the
// limit or the field, writes nothing, and is audited.
func TestHostileBodies(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	r.register(r.client(url, "root"), "c1", map[string]string{"env": "dev"})
	app := string(appIn("web", "default"))
	big := strings.Repeat("x", api.MaxBodyBytes)
	// Under the body's limit, over an event's.
	bigApp := strings.Replace(app, `"targetRevision":"main"`, `"targetRevision":"main","helm":{"values":"`+strings.Repeat("x", 600<<10)+`"}`, 1)
	var cases []hostile
	for _, route := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/applications"},
		{http.MethodPost, "/api/v1/appprojects"},
		{http.MethodPost, "/api/v1/placements"},
		{http.MethodPut, "/api/v1/clusters/c2"},
		{http.MethodPut, "/api/v1/clusters/c1/repositories/argocd/apps"},
	} {
		cases = append(cases,
			hostile{name: "too long " + route.path, method: route.method, path: route.path,
				body: `{"manifest":{"x":"` + big + `"}}`, status: http.StatusRequestEntityTooLarge, text: fmt.Sprint(api.MaxBodyBytes)},
			hostile{name: "garbage after " + route.path, method: route.method, path: route.path,
				body: `{}]` + strings.Repeat("garbage", 100_000), status: http.StatusBadRequest, text: "more than one JSON value"},
			hostile{name: "a field twice " + route.path, method: route.method, path: route.path,
				body: `{"expectedGeneration":0,"expectedGeneration":1}`, status: http.StatusBadRequest, field: "expectedGeneration"},
			hostile{name: "too deep " + route.path, method: route.method, path: route.path,
				body: `{"manifest":` + deep(api.MaxDepth+1) + `}`, status: http.StatusBadRequest, text: fmt.Sprint(api.MaxDepth)},
		)
	}
	cases = append(cases,
		hostile{name: "clusters twice", method: http.MethodPost, path: "/api/v1/applications",
			body: `{"clusters":["c1"],"manifest":` + app + `,"clusters":["c1","c2"]}`, status: http.StatusBadRequest, field: "clusters"},
		hostile{name: "clusters in another case", method: http.MethodPost, path: "/api/v1/applications",
			body: `{"clusters":["c1"],"manifest":` + app + `,"Clusters":["c2"]}`, status: http.StatusBadRequest, field: "Clusters"},
		hostile{name: "an event past the log's limit", method: http.MethodPost, path: "/api/v1/applications",
			body: `{"clusters":["c1"],"manifest":` + bigApp + `}`, status: http.StatusRequestEntityTooLarge, text: "512 KiB"},
		hostile{name: "a placement past the log's limit", method: http.MethodPost, path: "/api/v1/placements",
			body: `{"selector":"env=dev","manifest":` + bigApp + `}`, status: http.StatusRequestEntityTooLarge, text: "512 KiB"},
		hostile{name: "a manifest key twice", method: http.MethodPost, path: "/api/v1/applications",
			body:   `{"clusters":["c1"],"manifest":` + strings.Replace(app, `"name":"web"`, `"name":"web","name":"other"`, 1) + `}`,
			status: http.StatusBadRequest, field: "manifest.metadata.name"},
	)
	r.refuse(url, cases)
}

// TestHostileNames sends names the event schema would refuse, in paths,
// labels, selectors and a repository's URL, to the real hub: each is a
// 400 naming the parameter or field, never a 500, writes nothing, and is
// audited; a repository URL's password is echoed nowhere.
func TestHostileNames(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	root := r.client(url, "root")
	r.register(root, "c1", map[string]string{"env": "dev"})
	signing, sealing, _ := clusterKeys(t)
	keys := fmt.Sprintf(`"signingKey":%q,"sealingKey":%q`, signing, sealing)
	repo := `{"url":"https://git.example.com/apps.git"}`
	long := strings.Repeat("a", 500)
	r.refuse(url, []hostile{
		{name: "repository ..x", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/..x", body: repo, status: 400, field: "name"},
		{name: "repository répo", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/r%C3%A9po", body: repo, status: 400, field: "name"},
		{name: "repository of 500", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/" + long, body: repo, status: 400, field: "name"},
		{name: "repository namespace", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/Argo_CD/apps", body: repo, status: 400, field: "namespace"},
		{name: "repository cluster", method: http.MethodPut, path: "/api/v1/clusters/C1/repositories/argocd/apps", body: repo, status: 400, field: "cluster"},
		{name: "delete an application", method: http.MethodDelete, path: "/api/v1/clusters/c1/applications/argocd/a%09b", status: 400, field: "name"},
		{name: "operate", method: http.MethodPost, path: "/api/v1/clusters/c1/applications/argocd/" + long + "/operations", body: `{"operation":"sync"}`, status: 400, field: "name"},
		{name: "delete a project", method: http.MethodDelete, path: "/api/v1/clusters/c1/appprojects/a.b/p", status: 400, field: "namespace"},
		{name: "delete a placement", method: http.MethodDelete, path: "/api/v1/placements/argocd/-x-", status: 400, field: "name"},
		{name: "register a cluster", method: http.MethodPut, path: "/api/v1/clusters/c%2E2", body: `{` + keys + `}`, status: 400, field: "name"},
		{name: "label ../x", method: http.MethodPut, path: "/api/v1/clusters/c2", body: `{"labels":{"../x":"1"},` + keys + `}`, status: 400, field: "labels[../x]"},
		{name: "label empty key", method: http.MethodPut, path: "/api/v1/clusters/c2", body: `{"labels":{"":"1"},` + keys + `}`, status: 400, field: "labels[]"},
		{name: "label value 10000", method: http.MethodPut, path: "/api/v1/clusters/c2", body: `{"labels":{"team":"` + strings.Repeat("v", 10_000) + `"},` + keys + `}`, status: 400, field: "labels[team]"},
		{name: "relabel ../x", method: http.MethodPut, path: "/api/v1/clusters/c1", body: `{"labels":{"../x":"1"}}`, status: 400, field: "labels[../x]"},
		{name: "selector ../x", method: http.MethodPost, path: "/api/v1/placements", body: `{"selector":"../x=1","manifest":` + string(appIn("web", "default")) + `}`, status: 400, field: "selector"},
		{name: "selector value 10000", method: http.MethodPost, path: "/api/v1/placements", body: `{"selector":"team=` + strings.Repeat("v", 10_000) + `","manifest":` + string(appIn("web", "default")) + `}`, status: 400, field: "selector"},
		{name: "repository project", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/apps",
			body: `{"url":"https://git.example.com/x.git","project":"Team_A"}`, status: 400, field: "project"},
		{name: "deregistration reason", method: http.MethodDelete, path: "/api/v1/clusters/c1?reason=" + strings.Repeat("x", 2000), status: 400, field: "reason"},
		{name: "repository URL with a password", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/apps",
			body: `{"url":"https://bot:PASSWORD@git.example.com/x.git"}`, status: 400, field: "url", text: "credentials"},
		{name: "repository URL with a token", method: http.MethodPut, path: "/api/v1/clusters/c1/repositories/argocd/apps",
			body: `{"url":"https://PASSWORD@git.example.com/x.git","credentials":{"username":"bot","password":"x"}}`, status: 400, field: "url"},
	})
	// The same repository with its credentials where they belong is taken.
	if _, err := root.PutRepository(t.Context(), "c1", "argocd", "apps", api.RepositoryRequest{URL: "https://git.example.com/x.git",
		Credentials: map[string]string{"username": "bot", "password": "PASSWORD"}}, api.WriteOptions{}); err != nil {
		t.Fatalf("a repository with sealed credentials: %v", err)
	}
}

// TestHostileQueries sends query parameters a route does not take, or
// takes once, to the real hub: a misspelt or repeated dryRun must be a
// 400, never a write meant as a dry run; and a path too long to audit
// whole is still audited.
func TestHostileQueries(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	r.register(r.client(url, "root"), "c1", map[string]string{"env": "dev"})
	apply := `{"clusters":["c1"],"manifest":` + string(appIn("web", "default")) + `}`
	r.refuse(url, []hostile{
		{name: "dryrun misspelt", method: http.MethodPost, path: "/api/v1/applications?dryrun=true", body: apply, status: 400, field: "dryrun"},
		{name: "dryRun empty", method: http.MethodPost, path: "/api/v1/applications?dryRun=", body: apply, status: 400, field: "dryRun"},
		{name: "dryRun twice", method: http.MethodPost, path: "/api/v1/applications?dryRun=false&dryRun=true", body: apply, status: 400, field: "dryRun"},
		{name: "cascade twice", method: http.MethodDelete, path: "/api/v1/clusters/c1/applications/argocd/web?cascade=false&cascade=true", status: 400, field: "cascade"},
		{name: "reason on a delete of an application", method: http.MethodDelete, path: "/api/v1/clusters/c1/applications/argocd/web?reason=x", status: 400, field: "reason"},
		{name: "a parameter of no route", method: http.MethodGet, path: "/api/v1/objects?cluster=c1&foo=1", status: 400, field: "foo"},
		{name: "dryRun on a read", method: http.MethodGet, path: "/api/v1/whoami?dryRun=true", status: 400, field: "dryRun"},
	})
	// A name of 300 KB is refused, and audited with its path shortened:
	// whole, the audit record would be past the log's limit on an event.
	before := len(r.records(events.TopicAudit))
	long := "/api/v1/clusters/c1/applications/argocd/" + strings.Repeat("a", 300<<10)
	if status, e := r.send(url, "root", http.MethodDelete, long, ""); status != http.StatusBadRequest {
		t.Fatalf("a 300 KB name: %d %+v, want 400", status, e)
	}
	var found bool
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)[before:]), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		if a.StatusCode == http.StatusBadRequest && strings.HasPrefix(long, strings.TrimSuffix(a.Path, "…")) && len(a.Path) < 4<<10 {
			found = true
		}
	}
	if !found {
		t.Error("the refusal of a 300 KB name was not audited")
	}
}

// TestHostileReadTimes asks the read API, through the hub, for times the
// store cannot hold: 400 naming the parameter, never the store's 500.
func TestHostileReadTimes(t *testing.T) {
	r := newRig(t, 2)
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	url := r.start(hub.WithReadAPI(read.New(store)))
	audit := len(r.records(events.TopicAudit))
	queries := []string{"/api/v1/audit?from=1600-01-01T00:00:00Z", "/api/v1/audit?to=2300-01-01T00:00:00Z",
		"/api/v1/deployments?from=0001-01-01T00:00:00Z", "/api/v1/reports/deployments?by=app&from=1000-01-01T00:00:00Z",
		"/api/v1/reports/rollouts?to=9999-01-01T00:00:00Z"}
	for _, q := range queries {
		status, e := r.send(url, "root", http.MethodGet, q, "")
		if status != http.StatusBadRequest || !strings.Contains(e.Error, "1678-01-01T00:00:00Z to 2262-01-01T00:00:00Z") {
			t.Errorf("%s: %d %q, want 400 naming the range", q, status, e.Error)
		}
	}
	failed := map[string]bool{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)[audit:]), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Outcome == "failed" && a.StatusCode == http.StatusBadRequest {
			failed[a.Path] = true
		}
	}
	for _, q := range queries {
		if path, _, _ := strings.Cut(q, "?"); !failed[path] {
			t.Errorf("%s: no audit record of the refusal", q)
		}
	}
}
