package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/hub/api"
)

// KubernetesGrant is the role and scopes a token that acts for other
// users (Token.ActFor) gives the users it names: a Kubernetes user by
// name, or every member of a Kubernetes group, as the Kubernetes API
// authenticated them (the mirror's admission webhook relays them); or an
// Argo CD user, or group, as an Argo CD API server's session names them
// (the mirror's UI proxy relays them). Each grant names one of the four.
type KubernetesGrant struct {
	User        string   `json:"user,omitempty"`
	Group       string   `json:"group,omitempty"`
	ArgoCDUser  string   `json:"argocdUser,omitempty"`
	ArgoCDGroup string   `json:"argocdGroup,omitempty"`
	Role        string   `json:"role"`
	Projects    []string `json:"projects,omitempty"`
	Clusters    string   `json:"clusters,omitempty"`
}

// Bounds of a relayed identity: a user's name and each group's, and how
// many groups.
const (
	maxActForName   = 256
	maxActForGroups = 64
)

// ActForPrefix begins the actor of a call made for a Kubernetes user: the
// audit names it k8s:USER. ArgoCDPrefix begins an Argo CD user's:
// argocd:USER.
const (
	ActForPrefix = "k8s:"
	ArgoCDPrefix = "argocd:"
)

// The sources of a relayed identity (api.HeaderActAsSource).
const (
	SourceKubernetes = "kubernetes"
	SourceArgoCD     = "argocd"
)

// names is how many of a grant's four names it sets.
func (g KubernetesGrant) names() int {
	n := 0
	for _, s := range []string{g.User, g.Group, g.ArgoCDUser, g.ArgoCDGroup} {
		if s != "" {
			n++
		}
	}
	return n
}

// grants checks a token's actFor entries and returns their principals, in
// order.
func grants(t Token) ([]*Principal, error) {
	var out []*Principal
	var errs []error
	for i, g := range t.ActFor {
		if g.names() != 1 {
			errs = append(errs, fmt.Errorf("actFor[%d]: name one user or group: user, group, argocdUser or argocdGroup", i))
			continue
		}
		p, err := newPrincipal(Token{Name: "actFor", SHA256: strings.Repeat("0", 64), Role: g.Role, Projects: g.Projects, Clusters: g.Clusters})
		if err != nil {
			errs = append(errs, fmt.Errorf("actFor[%d]: %w", i, errors.Unwrap(err)))
			continue
		}
		out = append(out, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("token %q: %w", t.Name, err)
	}
	return out, nil
}

// ActFor returns the principal of the user whose identity p relays (user
// and groups): from source SourceKubernetes (or ""), as the Kubernetes API
// authenticated them; from SourceArgoCD, as an Argo CD API server's
// session names them. It has the role and scopes of the first of p's
// actFor grants that names the user or one of its groups in that source,
// the actor k8s:USER or argocd:USER, and p as the one who relayed it
// (Via). It is ErrDenied when p may act for no one, or the source is
// another, and a principal with no role when no grant names the user.
func (p *Principal) ActFor(source, user string, groups []string) (*Principal, error) {
	if len(p.actFor) == 0 {
		return nil, fmt.Errorf("%w: %s may not act for anyone: its token has no actFor grants", ErrDenied, p.Actor)
	}
	if user == "" || len(user) > maxActForName || !Printable(user) {
		return nil, fmt.Errorf("%w: the user to act for must be 1 to %d printable bytes", ErrDenied, maxActForName)
	}
	if len(groups) > maxActForGroups {
		return nil, fmt.Errorf("%w: at most %d groups of the user to act for, not %d", ErrDenied, maxActForGroups, len(groups))
	}
	for _, g := range groups {
		if g == "" || len(g) > maxActForName || !Printable(g) {
			return nil, fmt.Errorf("%w: each group of the user to act for must be 1 to %d printable bytes", ErrDenied, maxActForName)
		}
	}
	prefix, kind := ActForPrefix, "Kubernetes"
	switch source {
	case "", SourceKubernetes:
	case SourceArgoCD:
		prefix, kind = ArgoCDPrefix, "Argo CD"
	default:
		return nil, fmt.Errorf("%w: the identity to act for comes from %q; want %s or %s", ErrDenied, source, SourceKubernetes, SourceArgoCD)
	}
	actor := prefix + user
	for i, g := range p.actForGrants {
		u, grp := g.User, g.Group
		if prefix == ArgoCDPrefix {
			u, grp = g.ArgoCDUser, g.ArgoCDGroup
		}
		if (u != "" && u == user) || (grp != "" && slices.Contains(groups, grp)) {
			q := *p.actFor[i]
			q.Actor, q.via = actor, p.Actor
			return &q, nil
		}
	}
	return &Principal{Identity: api.Identity{Actor: actor}, selector: labels.Nothing(), via: p.Actor,
		noRole: fmt.Sprintf("%s may act for no %s user %q of groups %q: no actFor grant of its token names them", p.Actor, kind, user, groups)}, nil
}

// Via is the token that relayed the call of the Kubernetes user p is
// (ActFor); empty for a caller who called.
func (p *Principal) Via() string { return p.via }

// ParseGrant reads an actFor grant as a command line writes it:
// user:NAME=ROLE, group:NAME=ROLE, argocd-user:NAME=ROLE or
// argocd-group:NAME=ROLE.
func ParseGrant(s string) (KubernetesGrant, error) {
	who, role, ok := strings.Cut(s, "=")
	kind, name, ok2 := strings.Cut(who, ":")
	if !ok || !ok2 || name == "" || role == "" {
		return KubernetesGrant{}, fmt.Errorf("grant %q: want user:NAME=ROLE, group:NAME=ROLE, argocd-user:NAME=ROLE or argocd-group:NAME=ROLE", s)
	}
	switch kind {
	case "user":
		return KubernetesGrant{User: name, Role: role}, nil
	case "group":
		return KubernetesGrant{Group: name, Role: role}, nil
	case "argocd-user":
		return KubernetesGrant{ArgoCDUser: name, Role: role}, nil
	case "argocd-group":
		return KubernetesGrant{ArgoCDGroup: name, Role: role}, nil
	}
	return KubernetesGrant{}, fmt.Errorf("grant %q: %q is not user, group, argocd-user or argocd-group", s, kind)
}

// CheckToken reports what makes t, as a tokens file has it, one the hub
// refuses: its name, role, hash, cluster selector or actFor grants.
func CheckToken(t Token) error {
	_, err := newPrincipal(t)
	return err
}
