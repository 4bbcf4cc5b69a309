//go:build integration

package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// TestAdopt: adopting an Application appends an upsert marked adopt, for
// one cluster only; adopting one the hub manages already is a conflict
// that names the command to change it, and AppProjects are not adopted.
func TestAdopt(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(), "root")
	r.register(root, "edge-1", nil)
	r.register(root, "edge-2", nil)
	manifest := json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"local-web","namespace":"argocd"},
		"spec":{"project":"default","source":{"repoURL":"https://git.example.com/web.git","path":"app","targetRevision":"main"},
		"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`)
	adopt := func(clusters ...string) (*api.Result, error) {
		return root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: clusters, Manifest: manifest, Adopt: true}, api.WriteOptions{})
	}
	if _, err := adopt("edge-1", "edge-2"); api.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("adopting on two clusters = %v, want 400", err)
	}
	res, err := adopt("edge-1")
	if err != nil {
		t.Fatal(err)
	}
	var re *api.ResponseError
	if _, err := adopt("edge-1"); api.StatusOf(err) != http.StatusConflict || !asResponse(err, &re) || !contains(re.Body.Hint, "argosy app apply") {
		t.Errorf("adopting again = %v, want 409 with a hint", err)
	}
	project := json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},"spec":{}}`)
	if _, err := root.Apply(t.Context(), api.KindAppProjects, api.ApplyRequest{Clusters: []string{"edge-1"}, Manifest: project, Adopt: true},
		api.WriteOptions{}); api.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("adopting an AppProject = %v, want 400", err)
	}
	var found bool
	for _, d := range ofType(r.decoded(r.records(events.TopicConfig)), events.TypeApplicationUpserted) {
		p := d.Data.(*schemas.ApplicationUpserted)
		if d.Event.ID() == res.Events[0].ID {
			found = true
			if !p.Adopt || p.Cluster != "edge-1" || p.Generation != 1 {
				t.Errorf("adoption event %+v: want adopt on edge-1 at generation 1", p)
			}
		} else {
			t.Errorf("unexpected upsert %+v", p)
		}
	}
	if !found {
		t.Error("the adoption is not on the config topic")
	}
}

// TestSourceCommit: a change's source commit goes into its events, a
// placement's into each cluster's; a commit from the future, or one that
// is not a full commit id, is a 400 naming the field.
func TestSourceCommit(t *testing.T) {
	r := newRig(t, 1)
	root := r.client(r.start(hub.WithPlaceInterval(100*time.Millisecond)), "root")
	r.register(root, "edge-1", map[string]string{"env": "edge"})
	manifest := json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},
		"spec":{"project":"default","source":{"repoURL":"https://git.example.com/web.git","path":"app","targetRevision":"main"},
		"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`)
	commit := &api.SourceCommit{Revision: strings.Repeat("a1", 20), CommittedAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Second)}
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"edge-1"}, Manifest: manifest, Commit: commit},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		commit api.SourceCommit
		field  string
	}{
		{api.SourceCommit{Revision: commit.Revision, CommittedAt: time.Now().Add(time.Hour)}, "commit.committedAt"},
		{api.SourceCommit{Revision: "main", CommittedAt: commit.CommittedAt}, "commit.revision"},
	} {
		_, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"edge-1"}, Manifest: manifest, Commit: &tc.commit}, api.WriteOptions{})
		var re *api.ResponseError
		if api.StatusOf(err) != http.StatusBadRequest || !asResponse(err, &re) || len(re.Body.Fields) != 1 || re.Body.Fields[0].Field != tc.field {
			t.Errorf("commit %+v: %v, want 400 naming %s", tc.commit, err, tc.field)
		}
	}
	placed := json.RawMessage(strings.Replace(string(manifest), `"name":"web"`, `"name":"placed"`, 1))
	if _, err := root.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=edge", Manifest: placed, Commit: commit}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got := map[string]*schemas.SourceCommit{}
		for _, d := range ofType(r.decoded(r.records(events.TopicConfig)), events.TypeApplicationUpserted) {
			p := d.Data.(*schemas.ApplicationUpserted)
			got[p.Name] = p.Commit
		}
		if len(got) == 2 {
			for name, c := range got {
				if c == nil || c.Revision != commit.Revision || !c.CommittedAt.Equal(commit.CommittedAt) {
					t.Errorf("%s carries commit %+v, want %+v", name, c, commit)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upserts %v: want web and the placement's", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
