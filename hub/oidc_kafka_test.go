//go:build integration

package hub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/oidctest"
	"github.com/argosyproj/argosy/schemas"
)

// TestOIDCLogin runs a hub that accepts a local issuer's ID tokens: a
// platform engineer's token registers a cluster, a viewer's is refused,
// and the audit names both by their OIDC identity with the outcome.
func TestOIDCLogin(t *testing.T) {
	r := newRig(t, 1)
	iss := oidctest.New(t)
	url := r.start(hub.WithOIDC(auth.OIDC{Issuer: iss.URL, ClientID: "argosy", Groups: []auth.OIDCGroup{
		{Group: "platform", Role: auth.RoleAdmin}, {Group: "everyone", Role: auth.RoleViewer}}}))
	client := func(email string, groups ...string) *api.Client {
		t.Helper()
		c, err := api.NewClient(url, iss.Token(t, oidctest.Claims{Subject: email, Audience: "argosy",
			Extra: map[string]any{"email": email, "groups": groups}}), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin, viewer := client("alice@example.com", "everyone", "platform"), client("bob@example.com", "everyone")
	signing, sealing, _ := clusterKeys(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := admin.RegisterCluster(t.Context(), "edge-1", api.ClusterRequest{SigningKey: signing, SealingKey: sealing}, api.WriteOptions{})
		if err == nil {
			break
		}
		// The hub reads the issuer's discovery document as it starts.
		if api.StatusOf(err) != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("register with an admin's ID token: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := viewer.RegisterCluster(t.Context(), "edge-2", api.ClusterRequest{}, api.WriteOptions{}); api.StatusOf(err) != http.StatusForbidden {
		t.Errorf("register with a viewer's ID token: %v, want 403", err)
	}
	if _, err := viewer.Objects(t.Context(), "", api.KindClusters); err != nil {
		t.Errorf("a viewer reads: %v", err)
	}
	if _, err := client("eve@example.com", "contractors").Objects(t.Context(), "", api.KindClusters); api.StatusOf(err) != http.StatusForbidden {
		t.Errorf("a token whose groups have no role: %v, want 403", err)
	}
	got := map[string]string{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Action == "clusters.register" || a.Actor == "oidc:eve@example.com" {
			got[a.Actor] = a.Outcome
		}
	}
	if got["oidc:alice@example.com"] != "allowed" || got["oidc:bob@example.com"] != "denied" || got["oidc:eve@example.com"] != "denied" {
		t.Errorf("calls audited %v, want alice's registration allowed, bob's denied, and eve's read denied", got)
	}
}
