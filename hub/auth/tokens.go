package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/hub/api"
)

// TokenFile is the tokens file: bearer tokens, and optionally an OIDC
// issuer whose ID tokens are accepted too.
type TokenFile struct {
	Tokens []Token `json:"tokens,omitempty"`
	OIDC   *OIDC   `json:"oidc,omitempty"`
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
	return ParseTokenFile(path, b)
}

// tokenSet is what the tokens file grants: its tokens, by hash, and the
// roles of its OIDC groups. The authenticator swaps it whole when the file
// changes; a call, and a session's call, takes the set as it is then.
type tokenSet struct {
	byHash map[[sha256.Size]byte]*Principal
	// groups are the oidc section's groups in the file's order (the first
	// a caller names decides), and roles their principals, whose Actor
	// each caller sets.
	groups []string
	roles  []*Principal
}

// newTokenSet checks a tokens file's tokens and OIDC groups and returns
// what they grant. With an error, the set holds what was valid.
func newTokenSet(f TokenFile) (*tokenSet, error) {
	s := &tokenSet{byHash: map[[sha256.Size]byte]*Principal{}}
	var errs []error
	names := map[string]bool{}
	for _, t := range f.Tokens {
		// The audit tells callers apart by name, and so do idempotency
		// keys: two tokens may not share one.
		if names[t.Name] {
			errs = append(errs, fmt.Errorf("token %q: the name twice: the audit would not tell the two apart", t.Name))
			continue
		}
		names[t.Name] = true
		p, err := newPrincipal(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.HasPrefix(t.Name, "oidc:") {
			errs = append(errs, fmt.Errorf("token %q: names starting oidc: are the OIDC callers'", t.Name))
		}
		if strings.HasPrefix(t.Name, ActForPrefix) {
			errs = append(errs, fmt.Errorf("token %q: names starting %s are the Kubernetes users' that tokens act for", t.Name, ActForPrefix))
		}
		if strings.HasPrefix(t.Name, ArgoCDPrefix) {
			errs = append(errs, fmt.Errorf("token %q: names starting %s are the Argo CD users' that tokens act for", t.Name, ArgoCDPrefix))
		}
		var h [sha256.Size]byte
		b, _ := hex.DecodeString(t.SHA256) // newPrincipal checked it
		copy(h[:], b)
		if _, dup := s.byHash[h]; dup {
			errs = append(errs, fmt.Errorf("token %q: the same token twice", t.Name))
		}
		s.byHash[h] = p
	}
	if f.OIDC != nil {
		errs = append(errs, s.addGroups(f.OIDC.Groups))
	}
	return s, errors.Join(errs...)
}

// addGroups checks the oidc section's groups and adds their roles.
func (s *tokenSet) addGroups(groups []OIDCGroup) error {
	if len(groups) == 0 {
		return errors.New("oidc.groups is required: no group would have a role")
	}
	var errs []error
	for i, g := range groups {
		switch {
		case g.Group == "":
			errs = append(errs, fmt.Errorf("oidc.groups[%d].group is required", i))
		case slices.Contains(s.groups, g.Group):
			errs = append(errs, fmt.Errorf("oidc.groups[%d]: group %q is listed twice; only the first would count", i, g.Group))
		}
		p, err := newPrincipal(Token{Name: "oidc", SHA256: strings.Repeat("0", 64), Role: g.Role, Projects: g.Projects, Clusters: g.Clusters})
		if err != nil {
			errs = append(errs, fmt.Errorf("oidc.groups[%d] (%s): %w", i, g.Group, errors.Unwrap(err)))
			continue
		}
		s.groups, s.roles = append(s.groups, g.Group), append(s.roles, p)
	}
	return errors.Join(errs...)
}

// oidcPrincipal returns the principal of an OIDC caller: the role and
// scopes of the first listed group it names, and the metrics' outcome. A
// caller none of whose groups is listed has no role: every action is
// denied, naming its groups (claim names the claim that held them). The
// principal keeps the caller's listed groups only, what a session needs.
func (s *tokenSet) oidcPrincipal(c Caller, claim string) (*Principal, string) {
	listed := slices.DeleteFunc(slices.Clone(c.Groups), func(g string) bool { return !slices.Contains(s.groups, g) })
	for i, g := range s.groups {
		if slices.Contains(c.Groups, g) {
			p := *s.roles[i]
			p.Actor = c.Actor
			p.oidc = &Caller{Actor: c.Actor, Groups: listed, Expires: c.Expires}
			return &p, "allowed"
		}
	}
	return &Principal{Identity: api.Identity{Actor: c.Actor}, selector: labels.Nothing(),
			noRole: fmt.Sprintf("none of %s's groups %q (claim %q) has a role here; the oidc.groups here are %q", c.Actor, c.Groups, claim, s.groups)},
		"no_role"
}

// Reload replaces the authenticator's tokens and OIDC groups with the
// file's. A file that is not valid changes nothing and is the error.
// Nothing else of the oidc section changes while the authenticator runs
// (the issuer, the client, the claims): restart reports that it differs
// from what the authenticator started with.
func (a *Authenticator) Reload(f TokenFile) (restart bool, err error) {
	set, err := newTokenSet(f)
	if err != nil {
		// A file that is not valid changes nothing, but for what it
		// takes away: a token it no longer holds, the one an operator
		// removes because it leaked, say, stops working all the same.
		a.set.Store(a.set.Load().without(f.Tokens))
		return false, err
	}
	a.set.Store(set)
	if (a.oidcCfg == nil) != (f.OIDC == nil) {
		return true, nil
	}
	if a.oidcCfg == nil {
		return false, nil
	}
	was, now := *a.oidcCfg, *f.OIDC
	was.Groups, now.Groups = nil, nil
	return !reflect.DeepEqual(was, now), nil
}

// tokenFilePoll is how often a replica reads its tokens file again.
const tokenFilePoll = time.Second

// tokenFile follows the tokens file for the authenticator: it reads the
// file every tokenFilePoll and hands a changed one to Reload.
type tokenFile struct {
	path string
	auth *Authenticator
	log  *slog.Logger
	// last is the hash of the content last read; failed is the last
	// failure to read it, logged once.
	last   [sha256.Size]byte
	failed string
}

// run follows the file until ctx ends.
func (f *tokenFile) run(ctx context.Context) error {
	t := time.NewTicker(tokenFilePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			f.check(ctx)
		}
	}
}

// check reads the file and reloads it if it changed. A file that cannot
// be read leaves the tokens as they were; one that is not valid takes away
// the tokens it no longer holds and changes nothing else. Both are logged.
func (f *tokenFile) check(ctx context.Context) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		if err.Error() != f.failed {
			f.failed = err.Error()
			f.log.ErrorContext(ctx, "the tokens file cannot be read; the tokens it had are kept", "err", err)
		}
		return
	}
	f.failed = ""
	sum := sha256.Sum256(b)
	if sum == f.last {
		return
	}
	f.last = sum
	tf, err := ParseTokenFile(f.path, b)
	restart := false
	if err == nil {
		restart, err = f.auth.Reload(tf)
	}
	if err != nil {
		f.log.ErrorContext(ctx, "the tokens file changed and is not valid; the tokens it had that the file still holds are kept", "path", f.path, "err", err)
		return
	}
	f.log.InfoContext(ctx, "the tokens file changed; its tokens and OIDC groups apply now", "path", f.path, "tokens", len(tf.Tokens))
	if restart {
		f.log.WarnContext(ctx, "the tokens file's oidc section changed beyond its groups; that takes a restart", "path", f.path)
	}
}

// ParseTokenFile parses the content b of the tokens file at path.
func ParseTokenFile(path string, b []byte) (TokenFile, error) {
	var f TokenFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return f, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return f, nil
}

// Printable reports whether s is UTF-8 of printable characters only, as
// unicode.IsPrint has them (letters, marks, numbers, punctuation, symbols
// and the ASCII space). A name the audit records as an actor holds no
// line break, control character, escape sequence or invisible formatting
// (a right-to-left override, a zero-width space) that could fake a line of
// a log or hide what it says.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// without returns s less the tokens that tokens does not hold.
func (s *tokenSet) without(tokens []Token) *tokenSet {
	held := map[string]bool{}
	for _, t := range tokens {
		held[strings.ToLower(t.SHA256)] = true
	}
	out := &tokenSet{byHash: map[[sha256.Size]byte]*Principal{}, groups: s.groups, roles: s.roles}
	for h, p := range s.byHash {
		if held[hex.EncodeToString(h[:])] {
			out.byHash[h] = p
		}
	}
	return out
}
