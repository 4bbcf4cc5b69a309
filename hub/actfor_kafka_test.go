//go:build integration

package hub_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/schemas"
)

// TestActForKubernetesUser: a viewer's token with actFor grants (the
// mirror's) makes a call for a Kubernetes user of team-a, which the
// user's grant allows in team-a's project and refuses in team-b's, and a
// user no grant names is refused; a deployer's token with no grants that
// sends the headers is refused whatever it may do itself. Each call is
// audited with the user as actor and the token as via, and only the
// allowed one appends a config event.
func TestActForKubernetesUser(t *testing.T) {
	r := newRig(t, 2)
	tok, mirror, err := auth.NewToken("mirror", auth.RoleViewer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	mirror.ActFor = []auth.KubernetesGrant{{Group: "team-a", Role: auth.RoleDeployer, Projects: []string{"team-a"}}}
	r.tokens["mirror"], r.list = tok, append(r.list, mirror)
	r.addToken("ci", auth.RoleDeployer, nil, "")
	url := r.start()
	root := r.client(url, "root")
	r.twoTeams(root)
	for name, project := range map[string]string{"pay": "team-a", "mail": "team-b"} {
		if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: appIn(name, project)},
			api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(r.records(events.TopicConfig))
	sync := api.OperationRequest{Operation: "sync"}
	bob := &api.ActAs{User: "bob", Groups: []string{"system:authenticated", "team-a"}}
	res, err := r.client(url, "mirror").Operate(t.Context(), "prod", "argocd", "pay", sync, api.WriteOptions{ActAs: bob})
	if err != nil {
		t.Fatalf("bob of team-a syncs team-a's pay: %v", err)
	}
	for what, tc := range map[string]struct {
		client, app string
		as          *api.ActAs
		says        string
	}{
		"bob, team-b's mail":           {"mirror", "mail", bob, `project "team-b"`},
		"mallory, of no grant":         {"mirror", "pay", &api.ActAs{User: "mallory", Groups: []string{"system:authenticated"}}, "no actFor grant"},
		"ci, acting for bob":           {"ci", "pay", bob, "may not act for anyone"},
		"the mirror, as itself":        {"mirror", "pay", nil, "role viewer"},
		"bob, with a format character": {"mirror", "pay", &api.ActAs{User: "bob\u202e"}, "printable"},
	} {
		_, err := r.client(url, tc.client).Operate(t.Context(), "prod", "argocd", tc.app, sync, api.WriteOptions{ActAs: tc.as})
		if api.StatusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want 403 saying %q", what, err, tc.says)
		}
	}
	if after := len(r.records(events.TopicConfig)); after != before+len(res.Events) {
		t.Errorf("the config topic grew by %d records, want the allowed sync's %d", after-before, len(res.Events))
	}
	got := map[string]string{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Action == auth.ActionOperate {
			got[a.Actor+" via "+a.Via+" "+a.Target] = a.Outcome
		}
	}
	want := map[string]string{
		"k8s:bob via mirror applications/argocd/pay":     "allowed",
		"k8s:bob via mirror applications/argocd/mail":    "denied",
		"k8s:mallory via mirror applications/argocd/pay": "denied",
		"ci via  applications/argocd/pay":                "denied",
		"mirror via  applications/argocd/pay":            "denied",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("audit of %q: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}
