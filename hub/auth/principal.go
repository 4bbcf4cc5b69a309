package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/hub/api"
)

// Roles. A viewer reads; a deployer also applies, deletes and operates
// Applications; an admin also registers clusters and manages AppProjects
// and repositories. Each is limited to its projects and its clusters.
const (
	RoleViewer   = "viewer"
	RoleDeployer = "deployer"
	RoleAdmin    = "admin"
)

// Token is one bearer token the tokens file grants: the token itself is
// never stored, only its SHA-256.
type Token struct {
	// Name is the actor the token speaks for, as the audit names it.
	Name string `json:"name"`
	// SHA256 is the hex SHA-256 of the token.
	SHA256 string `json:"sha256"`
	Role   string `json:"role"`
	// Projects limits the token to Applications of these AppProjects (and,
	// for an admin, to these AppProjects); empty means every project.
	Projects []string `json:"projects,omitempty"`
	// Clusters limits the token to the clusters this label selector
	// matches; empty means every cluster.
	Clusters string `json:"clusters,omitempty"`
	// ActFor lets the token's calls act for the Kubernetes users whose
	// identity they relay (the headers api.HeaderActAsUser and
	// api.HeaderActAsGroup): argosy-hub mirror's admission webhook
	// relays who changed a mirrored Application. Each such call has the
	// role and scopes of the first grant that names the user or one of
	// its groups, whatever the token's own; the audit names the user and
	// the token (Via). Give it only to a token kept as well as an admin's.
	ActFor []KubernetesGrant `json:"actFor,omitempty"`
}

// NewToken returns a new random token and its entry for the tokens file.
func NewToken(name, role string, projects []string, clusters string) (string, Token, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", Token{}, err
	}
	tok := "argosy_" + base64.RawURLEncoding.EncodeToString(b)
	t := Token{Name: name, SHA256: HashToken(tok), Role: role, Projects: projects, Clusters: clusters}
	if _, err := newPrincipal(t); err != nil {
		return "", Token{}, err
	}
	return tok, t, nil
}

// HashToken returns the hex SHA-256 of a token.
func HashToken(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

// Principal is an authenticated caller: who it is, its role, and the
// projects and clusters it is limited to. A Principal made of an Identity
// alone (the hub's own calls, say) has no cluster selector: it may act on
// no cluster.
type Principal struct {
	api.Identity
	selector labels.Selector
	// noRole, when set, is why an authenticated caller has no role (an
	// OIDC token whose groups grant none): every action is denied.
	noRole string
	// oidc is a caller by OIDC's, nil for a token of the tokens file.
	oidc *Caller
	// actFor and actForGrants are the token's actFor grants and their
	// principals; via is the token that relayed a call made for a
	// Kubernetes user (ActFor).
	actFor       []*Principal
	actForGrants []KubernetesGrant
	via          string
}

// Caller is a caller by OIDC, as its verified ID token or a session
// started with it names it.
type Caller struct {
	Actor string
	// Groups are its groups; a principal keeps only those the tokens file
	// lists.
	Groups []string
	// Expires is when the ID token expires.
	Expires time.Time
}

// OIDC returns the OIDC caller p is, or nil for a token of the tokens
// file.
func (p *Principal) OIDC() *Caller { return p.oidc }

// Has reports whether p has role at least, and a role at all.
func (p *Principal) Has(role string) bool { return p.noRole == "" && Rank(p.Role) >= Rank(role) }

func newPrincipal(t Token) (*Principal, error) {
	var errs []error
	if t.Name == "" {
		errs = append(errs, errors.New("a name is required"))
	} else if !Printable(t.Name) {
		errs = append(errs, errors.New("the name holds a control or unprintable character, and the audit records it as the actor"))
	}
	if !slices.Contains([]string{RoleViewer, RoleDeployer, RoleAdmin}, t.Role) {
		errs = append(errs, fmt.Errorf("role %q: want viewer, deployer or admin", t.Role))
	}
	if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
		errs = append(errs, errors.New("sha256: want 64 hex digits"))
	}
	sel, err := labels.Parse(t.Clusters)
	if err != nil {
		errs = append(errs, fmt.Errorf("clusters: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("token %q: %w", t.Name, err)
	}
	acts, err := grants(t)
	if err != nil {
		return nil, err
	}
	return &Principal{Identity: api.Identity{Actor: t.Name, Role: t.Role, Projects: t.Projects, Clusters: t.Clusters}, selector: sel,
		actFor: acts, actForGrants: t.ActFor}, nil
}

// Actions a principal is authorized for. The audit records them by these
// names.
const (
	ActionRead             = "read"
	ActionApplyApplication = "applications.apply"
	ActionDeleteApp        = "applications.delete"
	ActionOperate          = "applications.operate"
	ActionApplyProject     = "appprojects.apply"
	ActionDeleteProject    = "appprojects.delete"
	ActionApplyRepository  = "repositories.apply"
	ActionDeleteRepository = "repositories.delete"
	ActionRegisterCluster  = "clusters.register"
	ActionDeregister       = "clusters.deregister"
	ActionApplyPlacement   = "placements.apply"
	ActionDeletePlacement  = "placements.delete"
	// ActionInspect asks a cluster for an Application's live resource
	// tree or one resource's manifest (a Secret's values masked), and
	// ActionLogs for a Pod's logs, which may hold what masking hides.
	ActionInspect = "applications.inspect"
	ActionLogs    = "applications.logs"
	// ActionPlace is the hub's own: the placer writing a placement's
	// Applications.
	ActionPlace = "placements.reconcile"
)

// minRole is the least role each action needs.
var minRole = map[string]string{
	ActionRead:             RoleViewer,
	ActionApplyApplication: RoleDeployer, ActionDeleteApp: RoleDeployer, ActionOperate: RoleDeployer,
	ActionApplyProject: RoleAdmin, ActionDeleteProject: RoleAdmin,
	ActionApplyRepository: RoleAdmin, ActionDeleteRepository: RoleAdmin,
	ActionRegisterCluster: RoleAdmin, ActionDeregister: RoleAdmin,
	ActionApplyPlacement: RoleDeployer, ActionDeletePlacement: RoleDeployer, ActionPlace: RoleAdmin,
	ActionInspect: RoleViewer, ActionLogs: RoleDeployer,
}

// Rank orders the roles: viewer 1, deployer 2, admin 3; anything else 0.
func Rank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleDeployer:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// ErrDenied is a call the caller may not make (403).
var ErrDenied = errors.New("denied")

// Allow checks that p may take action on a cluster with clusterLabels
// (nil: no cluster) in project ("": no project).
func (p *Principal) Allow(action, cluster string, clusterLabels map[string]string, project string) error {
	if p.noRole != "" {
		return fmt.Errorf("%w: %s", ErrDenied, p.noRole)
	}
	if Rank(p.Role) < Rank(minRole[action]) {
		return fmt.Errorf("%w: %s may not %s: role %s, and it needs %s", ErrDenied, p.Actor, action, p.Role, minRole[action])
	}
	if cluster != "" && !p.selector.Matches(labels.Set(clusterLabels)) {
		return fmt.Errorf("%w: %s may not %s on cluster %q: its labels do not match %q", ErrDenied, p.Actor, action, cluster, p.Clusters)
	}
	if project != "" && len(p.Projects) > 0 && !slices.Contains(p.Projects, project) {
		return fmt.Errorf("%w: %s may not %s in project %q: allowed projects are %s", ErrDenied, p.Actor, action, project, strings.Join(p.Projects, ", "))
	}
	return nil
}

// AllowShared is Allow for what every project shares: a cluster, or a
// repository or object of no project (""). A token limited to projects
// may not change what the other projects rely on too.
func (p *Principal) AllowShared(action, cluster string, clusterLabels map[string]string, project string) error {
	if project == "" && len(p.Projects) > 0 && action != ActionRead {
		return fmt.Errorf("%w: %s may not %s: the token is limited to projects %s, and this serves every project", ErrDenied, p.Actor, action, strings.Join(p.Projects, ", "))
	}
	return p.Allow(action, cluster, clusterLabels, project)
}

// AllowEveryCluster refuses a token limited to some clusters: a placement
// reaches, and its deletion prunes, every cluster its selector matches,
// now and later.
func (p *Principal) AllowEveryCluster() error {
	if p.Clusters != "" {
		return fmt.Errorf("%w: %s's token is limited to clusters %q, and a placement reaches every cluster its selector matches, now and later", ErrDenied, p.Actor, p.Clusters)
	}
	return nil
}

// The principal is the read API's and the dashboard's scope
// (read.Scope): what its cluster selector and projects allow.

// Cluster implements read.Scope.
func (p *Principal) Cluster(_ string, clusterLabels map[string]string) bool {
	return p.selector.Matches(labels.Set(clusterLabels))
}

// Project implements read.Scope.
func (p *Principal) Project(project string) bool {
	return len(p.Projects) == 0 || slices.Contains(p.Projects, project)
}

// Limited implements read.Scope.
func (p *Principal) Limited() (clusters, projects bool) {
	return p.Clusters != "", len(p.Projects) > 0
}
