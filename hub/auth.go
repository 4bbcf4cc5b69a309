package hub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"

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

// Token is one bearer token the hub accepts, as the tokens file holds it:
// the token itself is never stored, only its SHA-256.
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
}

// TokenFile is the tokens file: bearer tokens, and optionally an OIDC
// issuer whose ID tokens the hub accepts too.
type TokenFile struct {
	Tokens []Token `json:"tokens,omitempty"`
	OIDC   *OIDC   `json:"oidc,omitempty"`
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

// LoadTokens reads a tokens file's tokens.
func LoadTokens(path string) ([]Token, error) {
	f, err := LoadTokenFile(path)
	return f.Tokens, err
}

// LoadTokenFile reads a tokens file.
func LoadTokenFile(path string) (TokenFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return TokenFile{}, fmt.Errorf("tokens file: %w", err)
	}
	return parseTokenFile(path, b)
}

// principal is an authenticated caller.
type principal struct {
	api.Identity
	selector labels.Selector
	// noRole, when set, is why an authenticated caller has no role (an
	// OIDC token whose groups grant none): every action is denied.
	noRole string
	// oidc is a caller by OIDC's, nil for a token of the tokens file.
	oidc *oidcCaller
}

func newPrincipal(t Token) (*principal, error) {
	var errs []error
	if t.Name == "" {
		errs = append(errs, errors.New("a name is required"))
	} else if !printable(t.Name) {
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
	return &principal{Identity: api.Identity{Actor: t.Name, Role: t.Role, Projects: t.Projects, Clusters: t.Clusters}, selector: sel}, nil
}

// authenticator finds the principal of a request's bearer token: a token
// of the tokens file, or an OIDC ID token; or of its dashboard session.
type authenticator struct {
	// set is what the tokens file grants now (tokens.go).
	set     atomic.Pointer[tokenSet]
	oidc    *oidcAuth
	oidcCfg *OIDC // as the hub started with it
	// sessions opens session cookies (sessions.go); nil: none are taken.
	sessions *sessions
	// verified counts OIDC verifications by outcome.
	verified func(ctx context.Context, outcome string)
}

func newAuthenticator(tokens []Token, oidcCfg *OIDC) (*authenticator, error) {
	a := &authenticator{oidcCfg: oidcCfg, verified: func(context.Context, string) {}}
	var errs []error
	if oidcCfg != nil {
		var err error
		if a.oidc, err = newOIDCAuth(*oidcCfg); err != nil {
			errs = append(errs, err)
		}
	}
	set, err := newTokenSet(TokenFile{Tokens: tokens, OIDC: oidcCfg})
	a.set.Store(set)
	errs = append(errs, err)
	if len(set.byHash) == 0 && oidcCfg == nil && errors.Join(errs...) == nil {
		errs = append(errs, errors.New("no tokens and no OIDC issuer: the hub would accept no one"))
	}
	return a, errors.Join(errs...)
}

// errUnauthenticated is a request without a token the hub knows.
var errUnauthenticated = errors.New("unauthenticated")

func (a *authenticator) authenticate(r *http.Request) (*principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return a.cookie(r)
	}
	return a.token(r.Context(), tok)
}

// token finds the principal of a bearer token.
func (a *authenticator) token(ctx context.Context, tok string) (*principal, error) {
	// Tokens are looked up by their hash: the lookup's timing depends on
	// the hash, which tells nothing about a token the caller does not have.
	set := a.set.Load()
	p, ok := set.byHash[sha256.Sum256([]byte(tok))]
	switch {
	case ok:
		return p, nil
	case a.oidc != nil && isJWT(tok):
		c, outcome, err := a.oidc.authenticate(ctx, tok)
		if err == nil {
			p, outcome = set.oidcPrincipal(c, a.oidc.cfg.GroupsClaim)
		}
		a.verified(ctx, outcome)
		return p, err
	}
	return nil, fmt.Errorf("%w: the token is not one this hub accepts", errUnauthenticated)
}

// Actions the hub authorizes.
const (
	actionRead             = "read"
	actionApplyApplication = "applications.apply"
	actionDeleteApp        = "applications.delete"
	actionOperate          = "applications.operate"
	actionApplyProject     = "appprojects.apply"
	actionDeleteProject    = "appprojects.delete"
	actionApplyRepository  = "repositories.apply"
	actionDeleteRepository = "repositories.delete"
	actionRegisterCluster  = "clusters.register"
	actionDeregister       = "clusters.deregister"
	actionApplyPlacement   = "placements.apply"
	actionDeletePlacement  = "placements.delete"
	// actionPlace is the hub's own: the placer writing a placement's
	// Applications.
	actionPlace = "placements.reconcile"
	// actionJoin is a spoke proving its join token.
	actionJoin = "clusters.join"
)

// minRole is the least role each action needs.
var minRole = map[string]string{
	actionRead:             RoleViewer,
	actionApplyApplication: RoleDeployer, actionDeleteApp: RoleDeployer, actionOperate: RoleDeployer,
	actionApplyProject: RoleAdmin, actionDeleteProject: RoleAdmin,
	actionApplyRepository: RoleAdmin, actionDeleteRepository: RoleAdmin,
	actionRegisterCluster: RoleAdmin, actionDeregister: RoleAdmin,
	actionApplyPlacement: RoleDeployer, actionDeletePlacement: RoleDeployer, actionPlace: RoleAdmin,
}

var rank = map[string]int{RoleViewer: 1, RoleDeployer: 2, RoleAdmin: 3}

// errDenied is a call the caller may not make.
var errDenied = errors.New("denied")

// allow checks that p may take action on a cluster with clusterLabels
// (nil: no cluster) in project ("": no project).
func (p *principal) allow(action, cluster string, clusterLabels map[string]string, project string) error {
	if p.noRole != "" {
		return fmt.Errorf("%w: %s", errDenied, p.noRole)
	}
	if rank[p.Role] < rank[minRole[action]] {
		return fmt.Errorf("%w: %s may not %s: role %s, and it needs %s", errDenied, p.Actor, action, p.Role, minRole[action])
	}
	if cluster != "" && !p.selector.Matches(labels.Set(clusterLabels)) {
		return fmt.Errorf("%w: %s may not %s on cluster %q: its labels do not match %q", errDenied, p.Actor, action, cluster, p.Clusters)
	}
	if project != "" && len(p.Projects) > 0 && !slices.Contains(p.Projects, project) {
		return fmt.Errorf("%w: %s may not %s in project %q: allowed projects are %s", errDenied, p.Actor, action, project, strings.Join(p.Projects, ", "))
	}
	return nil
}

// allowShared is allow for what every project shares: a cluster, or a
// repository or object of no project (""). A token limited to projects
// may not change what the other projects rely on too.
func (p *principal) allowShared(action, cluster string, clusterLabels map[string]string, project string) error {
	if project == "" && len(p.Projects) > 0 && action != actionRead {
		return fmt.Errorf("%w: %s may not %s: the token is limited to projects %s, and this serves every project", errDenied, p.Actor, action, strings.Join(p.Projects, ", "))
	}
	return p.allow(action, cluster, clusterLabels, project)
}

// allowRegistered checks a change to a cluster against the cluster as it
// is (cur, when it is registered): a change is allowed only when it is on
// both sides, what the cluster is and what it would become.
func (p *principal) allowRegistered(action, cluster string, cur entry, exists bool) error {
	if !exists || cur.deleted {
		return nil
	}
	return p.allowShared(action, cluster, cur.labels, "")
}

// allowEveryCluster refuses a token limited to some clusters: a placement
// reaches, and its deletion prunes, every cluster its selector matches,
// now and later.
func (p *principal) allowEveryCluster() error {
	if p.Clusters != "" {
		return fmt.Errorf("%w: %s's token is limited to clusters %q, and a placement reaches every cluster its selector matches, now and later", errDenied, p.Actor, p.Clusters)
	}
	return nil
}

// The principal is the read API's and the dashboard's scope
// (read.Scope): what its cluster selector and projects allow.

// Cluster implements read.Scope.
func (p *principal) Cluster(_ string, clusterLabels map[string]string) bool {
	return p.selector.Matches(labels.Set(clusterLabels))
}

// Project implements read.Scope.
func (p *principal) Project(project string) bool {
	return len(p.Projects) == 0 || slices.Contains(p.Projects, project)
}

// Limited implements read.Scope.
func (p *principal) Limited() (clusters, projects bool) {
	return p.Clusters != "", len(p.Projects) > 0
}
