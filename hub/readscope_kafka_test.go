//go:build integration

package hub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// getJSON reads a read-API route as actor and returns its status and
// decoded body.
func (r *rig) getJSON(url, actor, path string) (int, map[string]any) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), http.MethodGet, url+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.tokens[actor])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		r.t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
	return resp.StatusCode, v
}

// names lists a field of a list answer's items, sorted and deduplicated.
func names(v map[string]any, field string) []string {
	var out []string
	items, _ := v["items"].([]any)
	for _, it := range items {
		if s, ok := it.(map[string]any)[field].(string); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// TestReadsStayInScope reads every kind of view with tokens limited to a
// cluster selector and to a project, through the hub's read API over a
// projector folding the real broker: each sees only its own clusters and
// projects, and a cluster out of scope is not found.
func TestReadsStayInScope(t *testing.T) {
	r := newRig(t, 2)
	r.addToken("staging-viewer", auth.RoleViewer, nil, "env=staging")
	r.addToken("team-a-viewer", auth.RoleViewer, []string{"team-a"}, "")
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	hubtest.Fold(t, []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.signer.Public())}, projector.WithTopics(r.topics))
	url := r.start(hub.WithReadAPI(read.New(store)))
	root := r.client(url, "root")
	r.twoTeams(root)
	for _, a := range []struct{ cluster, name, project string }{{"prod", "pay", "team-a"}, {"staging", "shop", "team-a"}, {"staging", "mail", "team-b"}} {
		if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{a.cluster}, Manifest: appIn(a.name, a.project)}, api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, v := r.getJSON(url, "root", "/api/v1/applications")
		if len(names(v, "name")) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the projector did not fold the three Applications: %v", v)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, tc := range []struct {
		actor, path, field string
		want               []string
	}{
		{"root", "/api/v1/clusters", "name", []string{"prod", "staging"}},
		{"staging-viewer", "/api/v1/clusters", "name", []string{"staging"}},
		{"staging-viewer", "/api/v1/applications", "name", []string{"mail", "shop"}},
		{"staging-viewer", "/api/v1/audit?limit=1000", "cluster", []string{"staging"}},
		{"team-a-viewer", "/api/v1/applications", "name", []string{"pay", "shop"}},
		{"team-a-viewer", "/api/v1/audit?limit=1000", "name", []string{"pay", "shop", "team-a"}}, // its Applications and its AppProject
	} {
		t.Run(tc.actor+" "+tc.path, func(t *testing.T) {
			status, v := r.getJSON(url, tc.actor, tc.path)
			if got := names(v, tc.field); status != http.StatusOK || !slices.Equal(got, tc.want) {
				t.Errorf("%d, %s %v, want %v", status, tc.field, got, tc.want)
			}
		})
	}
	for _, path := range []string{"/api/v1/clusters/prod", "/api/v1/clusters/prod/applications"} {
		if status, v := r.getJSON(url, "staging-viewer", path); status != http.StatusNotFound {
			t.Errorf("staging-viewer GET %s = %d %v, want 404", path, status, v)
		}
	}
}
