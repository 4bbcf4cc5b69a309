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
	bob, err := m.ActFor("bob", []string{"everyone", "team-a"})
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
	if _, err := bob.ActFor("carol", []string{"everyone"}); !errors.Is(err, ErrDenied) {
		t.Errorf("a relayed user relaying again: %v, want denied", err)
	}
	alice, _ := m.ActFor("alice", nil)
	if alice.Role != RoleAdmin || alice.Allow(ActionRegisterCluster, "", nil, "") != nil {
		t.Errorf("alice by name: %+v, want admin", alice.Identity)
	}
	stranger, err := m.ActFor("mallory", []string{"system:authenticated"})
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Allow(ActionRead, "", nil, ""); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "mallory") {
		t.Errorf("a user no grant names: %v, want denied naming the user", err)
	}
	if _, err := ci.ActFor("alice", nil); !errors.Is(err, ErrDenied) {
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
		if _, err := m.ActFor(tc.user, tc.groups); !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %v, want denied", name, err)
		}
	}
	for name, g := range map[string]KubernetesGrant{
		"both": {User: "a", Group: "b", Role: RoleViewer}, "neither": {Role: RoleViewer}, "bad role": {User: "a", Role: "root"},
		"bad clusters": {User: "a", Role: RoleViewer, Clusters: "=="},
	} {
		bad := mirror
		bad.ActFor = []KubernetesGrant{g}
		if _, err := newTokenSet(TokenFile{Tokens: []Token{bad}}); err == nil {
			t.Errorf("grant %s: valid, want an error", name)
		}
	}
	named := plain
	named.Name = "k8s:alice"
	if _, err := newTokenSet(TokenFile{Tokens: []Token{named}}); err == nil {
		t.Error("a token named k8s:alice is valid, want an error: the audit would take it for a relayed user")
	}
}
