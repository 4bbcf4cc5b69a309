//go:build integration

package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/schemas"
)

// addToken adds a token to the rig; call it before starting a replica.
func (r *rig) addToken(name, role string, projects []string, clusters string) {
	r.t.Helper()
	tok, entry, err := auth.NewToken(name, role, projects, clusters)
	if err != nil {
		r.t.Fatal(err)
	}
	r.tokens[name] = tok
	r.list = append(r.list, entry)
}

func projectManifest(name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":%q,"namespace":"argocd"},
	"spec":{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}]}}`, name))
}

func appIn(name, project string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":%q,"namespace":"argocd"},
	"spec":{"project":%q,"source":{"repoURL":"https://git.example/apps.git","path":"web","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`, name, project))
}

// scopeRig is a fleet of a production and a staging cluster, AppProjects
// team-a and team-b on both, and tokens each limited one step away from
// what the attacks below try to touch.
func scopeRig(t *testing.T) (*rig, string) {
	t.Helper()
	r := newRig(t, 2)
	r.addToken("staging-admin", auth.RoleAdmin, nil, "env=staging")
	r.addToken("staging-deployer", auth.RoleDeployer, nil, "env=staging")
	r.addToken("team-a", auth.RoleDeployer, []string{"team-a"}, "")
	r.addToken("team-a-admin", auth.RoleAdmin, []string{"team-a"}, "")
	url := r.start()
	r.twoTeams(r.client(url, "root"))
	return r, url
}

// twoTeams registers a production and a staging cluster and applies the
// AppProjects team-a and team-b on both.
func (r *rig) twoTeams(root *api.Client) {
	r.t.Helper()
	r.register(root, "prod", map[string]string{"env": "prod"})
	r.register(root, "staging", map[string]string{"env": "staging"})
	for _, p := range []string{"team-a", "team-b"} {
		if _, err := root.Apply(r.t.Context(), api.KindAppProjects, api.ApplyRequest{Clusters: []string{"prod", "staging"}, Manifest: projectManifest(p)}, api.WriteOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// object returns the ledger's word on one object, as root sees it.
func object(t *testing.T, c *api.Client, cluster, kind, name string) api.Object {
	t.Helper()
	objs, err := c.Objects(t.Context(), cluster, kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Name == name {
			return o
		}
	}
	return api.Object{}
}

// TestScopeEscapes makes each call a token one step outside its scope
// would use to reach past it: each must be refused and write nothing.
func TestScopeEscapes(t *testing.T) {
	r, url := scopeRig(t)
	root := r.client(url, "root")
	ctx := t.Context()
	if _, err := root.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{"staging"}, Manifest: appIn("shop", "team-b")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.ApplyPlacement(ctx, api.PlacementRequest{Selector: "env=prod", Manifest: appIn("billing", "team-b")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.ApplyPlacement(ctx, api.PlacementRequest{Selector: "env=prod", Manifest: appIn("web", "team-a")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The placer writes both placements' Applications to prod first.
	deadline := time.Now().Add(30 * time.Second)
	for object(t, root, "prod", api.KindApplications, "billing").Name == "" || object(t, root, "prod", api.KindApplications, "web").Name == "" {
		if time.Now().After(deadline) {
			t.Fatal("the placements' Applications were not placed on prod")
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := len(r.records(events.TopicConfig))

	for _, tc := range []struct {
		name, actor string
		call        func(c *api.Client) error
	}{
		{"relabel production into the token's scope", "staging-admin", func(c *api.Client) error {
			_, err := c.RegisterCluster(ctx, "prod", api.ClusterRequest{Labels: map[string]string{"env": "staging"}}, api.WriteOptions{})
			return err
		}},
		{"deregister production", "staging-admin", func(c *api.Client) error {
			_, err := c.DeregisterCluster(ctx, "prod", "", api.WriteOptions{})
			return err
		}},
		{"take over team-b's Application by naming team-a", "team-a", func(c *api.Client) error {
			_, err := c.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{"staging"}, Manifest: appIn("shop", "team-a")}, api.WriteOptions{})
			return err
		}},
		{"adopt an Application of the cluster's into its project", "team-a", func(c *api.Client) error {
			_, err := c.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{"staging"}, Manifest: appIn("local", "team-a"), Adopt: true}, api.WriteOptions{})
			return err
		}},
		{"take over team-b's placement by naming team-a", "team-a", func(c *api.Client) error {
			_, err := c.ApplyPlacement(ctx, api.PlacementRequest{Selector: "env=prod", Manifest: appIn("billing", "team-a")}, api.WriteOptions{})
			return err
		}},
		{"delete a production placement", "staging-deployer", func(c *api.Client) error {
			_, err := c.DeletePlacement(ctx, "argocd", "web", api.WriteOptions{})
			return err
		}},
		{"register a cluster as a project admin", "team-a-admin", func(c *api.Client) error {
			_, err := c.RegisterCluster(ctx, "staging", api.ClusterRequest{Labels: map[string]string{"env": "staging", "owner": "team-a"}}, api.WriteOptions{})
			return err
		}},
		{"deregister a cluster as a project admin", "team-a-admin", func(c *api.Client) error {
			_, err := c.DeregisterCluster(ctx, "staging", "", api.WriteOptions{})
			return err
		}},
		{"add a repository of every project as a project admin", "team-a-admin", func(c *api.Client) error {
			_, err := c.PutRepository(ctx, "staging", "argocd", "shared", api.RepositoryRequest{URL: "https://git.example/shared.git"}, api.WriteOptions{})
			return err
		}},
		{"add a repository of another project", "team-a-admin", func(c *api.Client) error {
			_, err := c.PutRepository(ctx, "staging", "argocd", "b", api.RepositoryRequest{URL: "https://git.example/b.git", Project: "team-b"}, api.WriteOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(r.client(url, tc.actor)); api.StatusOf(err) != http.StatusForbidden {
				t.Errorf("= %v, want 403", err)
			}
		})
	}
	if after := len(r.records(events.TopicConfig)); after != before {
		t.Errorf("refused calls wrote %d config records", after-before)
	}
	if o := object(t, root, "staging", api.KindApplications, "shop"); o.Project != "team-b" {
		t.Errorf("shop is in project %q, want team-b", o.Project)
	}
	// What the tokens may do, they still do.
	if _, err := r.client(url, "team-a-admin").PutRepository(ctx, "staging", "argocd", "a", api.RepositoryRequest{URL: "https://git.example/a.git", Project: "team-a"}, api.WriteOptions{}); err != nil {
		t.Errorf("a project admin adds its project's repository: %v", err)
	}
	if _, err := r.client(url, "staging-admin").RegisterCluster(ctx, "staging", api.ClusterRequest{Labels: map[string]string{"env": "staging", "tier": "2"}}, api.WriteOptions{}); err != nil {
		t.Errorf("a staging admin relabels staging: %v", err)
	}
}

// TestEveryDecidedCallAudited checks that the outcome of every call by a
// principal is on the audit topic, refusals decided under the lock and
// conflicts included, while calls without a credential are only counted
// and, past a burst, answered 429.
func TestEveryDecidedCallAudited(t *testing.T) {
	r, url := scopeRig(t)
	ctx := t.Context()
	zero := int64(0)
	if _, err := r.client(url, "root").RegisterCluster(ctx, "prod", api.ClusterRequest{ExpectedGeneration: &zero}, api.WriteOptions{}); api.StatusOf(err) != http.StatusConflict {
		t.Fatalf("register prod again = %v, want 409", err)
	}
	if _, err := r.client(url, "staging-admin").RegisterCluster(ctx, "prod", api.ClusterRequest{Labels: map[string]string{"env": "staging"}}, api.WriteOptions{}); api.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("relabel prod = %v, want 403", err)
	}
	anon, err := api.NewClient(url, "argosy_not-a-token", nil)
	if err != nil {
		t.Fatal(err)
	}
	limited := 0
	for range 40 {
		_, err := anon.Whoami(ctx)
		switch api.StatusOf(err) {
		case http.StatusTooManyRequests:
			limited++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("whoami without a valid token = %v", err)
		}
	}
	if limited == 0 {
		t.Error("40 calls without a valid token in a burst were never limited")
	}
	var got []string
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		if a.Action == "clusters.register" && a.Outcome != "allowed" {
			got = append(got, fmt.Sprintf("%s %s %d", a.Actor, a.Outcome, a.StatusCode))
		}
		if a.Actor == "anonymous" {
			t.Errorf("a call without a credential was audited: %+v", a)
		}
	}
	want := map[string]bool{"root failed 409": true, "staging-admin denied 403": true}
	for _, g := range got {
		delete(want, g)
	}
	if len(want) > 0 {
		t.Errorf("refused registrations audited %v; missing %v", got, want)
	}
}
