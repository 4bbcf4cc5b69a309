package auth

import (
	"errors"
	"strings"
	"testing"
)

// TestActFor: a token with actFor grants acts for the Kubernetes users
// they name, with the first matching grant's role and scopes whatever
// its own, named k8s:USER and relayed by the token; a user no grant
// names has no role; a token with no grants, and a relayed identity past
// its bounds or unprintable, are refused; a grant that names both a user
// and a group, or neither, is not valid, nor is a token named k8s:….
func TestActFor(t *testing.T) {
	_, mirror, err := NewToken("mirror", RoleViewer, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	mirror.ActFor = []KubernetesGrant{
		{User: "alice", Role: RoleAdmin},
		{Group: "team-a", Role: RoleDeployer, Projects: []string{"shop"}, Clusters: "env=dev"},
		{Group: "everyone", Role: RoleViewer},
		{ArgoCDUser: "carol", Role: RoleDeployer},
		{ArgoCDGroup: "platform", Role: RoleAdmin},
	}
	_, plain, _ := NewToken("ci", RoleDeployer, nil, "")
	set, err := newTokenSet(TokenFile{Tokens: []Token{mirror, plain}})
	if err != nil {
		t.Fatal(err)
	}
	var m, ci *Principal
	for _, p := range set.byHash {
		switch p.Actor {
		case "mirror":
			m = p
		case "ci":
			ci = p
		}
	}
	bob, err := m.ActFor("", "bob", []string{"everyone", "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if bob.Actor != "k8s:bob" || bob.Via() != "mirror" || bob.Role != RoleDeployer {
		t.Errorf("bob of team-a: %+v via %q, want k8s:bob, deployer, via mirror", bob.Identity, bob.Via())
	}
	if err := bob.Allow(ActionOperate, "c1", map[string]string{"env": "prod"}, "shop"); !errors.Is(err, ErrDenied) {
		t.Errorf("bob on a prod cluster: %v, want denied by team-a's cluster scope", err)
	}
	if err := bob.Allow(ActionOperate, "c1", map[string]string{"env": "dev"}, "shop"); err != nil {
		t.Errorf("bob on a dev cluster in shop: %v", err)
	}
	if _, err := bob.ActFor("", "carol", []string{"everyone"}); !errors.Is(err, ErrDenied) {
		t.Errorf("a relayed user relaying again: %v, want denied", err)
	}
	alice, _ := m.ActFor("", "alice", nil)
	if alice.Role != RoleAdmin || alice.Allow(ActionRegisterCluster, "", nil, "") != nil {
		t.Errorf("alice by name: %+v, want admin", alice.Identity)
	}
	stranger, err := m.ActFor("", "mallory", []string{"system:authenticated"})
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Allow(ActionRead, "", nil, ""); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "mallory") {
		t.Errorf("a user no grant names: %v, want denied naming the user", err)
	}
	if _, err := ci.ActFor("", "alice", nil); !errors.Is(err, ErrDenied) {
		t.Errorf("a token with no grants acting for alice: %v, want denied", err)
	}
	for name, tc := range map[string]struct {
		user   string
		groups []string
	}{
		"no user":          {"", []string{"team-a"}},
		"long user":        {strings.Repeat("a", 257), nil},
		"control in user":  {"alice\nadmin", nil},
		"too many groups":  {"bob", make([]string, 65)},
		"empty group":      {"bob", []string{""}},
		"control in group": {"bob", []string{"team-a\x00"}},
	} {
		if _, err := m.ActFor("", tc.user, tc.groups); !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %v, want denied", name, err)
		}
	}
	for name, g := range map[string]KubernetesGrant{
		"both": {User: "a", Group: "b", Role: RoleViewer}, "neither": {Role: RoleViewer}, "bad role": {User: "a", Role: "root"},
		"kubernetes and argocd": {User: "a", ArgoCDUser: "a", Role: RoleViewer},
		"bad clusters":          {User: "a", Role: RoleViewer, Clusters: "=="},
	} {
		bad := mirror
		bad.ActFor = []KubernetesGrant{g}
		if _, err := newTokenSet(TokenFile{Tokens: []Token{bad}}); err == nil {
			t.Errorf("grant %s: valid, want an error", name)
		}
	}
	for _, n := range []string{"k8s:alice", "argocd:alice"} {
		named := plain
		named.Name = n
		if _, err := newTokenSet(TokenFile{Tokens: []Token{named}}); err == nil {
			t.Errorf("a token named %s is valid, want an error: the audit would take it for a relayed user", n)
		}
	}
}

// TestActForArgoCD: an Argo CD user is matched by the argocd grants
// alone, and a Kubernetes user by the others, whatever the names.
func TestActForArgoCD(t *testing.T) {
	_, mirror, _ := NewToken("mirror", RoleViewer, nil, "")
	mirror.ActFor = []KubernetesGrant{
		{User: "alice", Role: RoleAdmin},
		{ArgoCDUser: "carol", Role: RoleDeployer},
		{ArgoCDGroup: "platform", Role: RoleAdmin},
	}
	set, err := newTokenSet(TokenFile{Tokens: []Token{mirror}})
	if err != nil {
		t.Fatal(err)
	}
	var m *Principal
	for _, p := range set.byHash {
		m = p
	}
	for _, tc := range []struct {
		source, user string
		groups       []string
		actor, role  string
	}{
		{SourceArgoCD, "carol", nil, "argocd:carol", RoleDeployer},
		{SourceArgoCD, "dave", []string{"platform"}, "argocd:dave", RoleAdmin},
		{SourceArgoCD, "alice", nil, "argocd:alice", ""},   // a Kubernetes user's grant
		{SourceKubernetes, "carol", nil, "k8s:carol", ""},  // an Argo CD user's grant
		{"", "dave", []string{"platform"}, "k8s:dave", ""}, // an Argo CD group's grant
		{SourceKubernetes, "alice", nil, "k8s:alice", RoleAdmin},
	} {
		p, err := m.ActFor(tc.source, tc.user, tc.groups)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.source, tc.user, err)
		}
		allowed := p.Allow(ActionRead, "", nil, "") == nil
		if p.Actor != tc.actor || p.Via() != "mirror" || (tc.role == "") == allowed || (tc.role != "" && p.Role != tc.role) {
			t.Errorf("%s %s %v: %s role %q (reads: %v) via %s, want %s role %q", tc.source, tc.user, tc.groups, p.Actor, p.Role, allowed, p.Via(), tc.actor, tc.role)
		}
	}
	if _, err := m.ActFor("oidc", "carol", nil); !errors.Is(err, ErrDenied) {
		t.Errorf("an unknown source: %v, want denied", err)
	}
	for in, want := range map[string]KubernetesGrant{
		"argocd-user:carol=deployer":  {ArgoCDUser: "carol", Role: "deployer"},
		"argocd-group:platform=admin": {ArgoCDGroup: "platform", Role: "admin"},
	} {
		if g, err := ParseGrant(in); err != nil || g.ArgoCDUser != want.ArgoCDUser || g.ArgoCDGroup != want.ArgoCDGroup || g.Role != want.Role {
			t.Errorf("ParseGrant(%q) = %+v, %v", in, g, err)
		}
	}
}
