package hub

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

// tokenSet is what the tokens file grants: its tokens, by hash, and the
// roles of its OIDC groups. The authenticator swaps it whole when the file
// changes; a call, and a session's call, takes the set as it is then.
type tokenSet struct {
	byHash map[[sha256.Size]byte]*principal
	// groups are the oidc section's groups in the file's order (the first
	// a caller names decides), and roles their principals, whose Actor
	// each caller sets.
	groups []string
	roles  []*principal
}

// newTokenSet checks a tokens file's tokens and OIDC groups and returns
// what they grant. With an error, the set holds what was valid.
func newTokenSet(f TokenFile) (*tokenSet, error) {
	s := &tokenSet{byHash: map[[sha256.Size]byte]*principal{}}
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

// oidcCaller is a caller by OIDC, as its verified ID token or its session
// names it.
type oidcCaller struct {
	actor  string
	groups []string
	// expires is when the ID token expires.
	expires time.Time
}

// oidcPrincipal returns the principal of an OIDC caller: the role and
// scopes of the first listed group it names, and the metrics' outcome. A
// caller none of whose groups is listed has no role: every action is
// denied, naming its groups (claim names the claim that held them). The
// principal keeps the caller's listed groups only, what a session needs.
func (s *tokenSet) oidcPrincipal(c oidcCaller, claim string) (*principal, string) {
	listed := slices.DeleteFunc(slices.Clone(c.groups), func(g string) bool { return !slices.Contains(s.groups, g) })
	for i, g := range s.groups {
		if slices.Contains(c.groups, g) {
			p := *s.roles[i]
			p.Actor = c.actor
			p.oidc = &oidcCaller{actor: c.actor, groups: listed, expires: c.expires}
			return &p, "allowed"
		}
	}
	return &principal{Identity: api.Identity{Actor: c.actor}, selector: labels.Nothing(),
			noRole: fmt.Sprintf("none of %s's groups %q (claim %q) has a role here; the hub's oidc.groups are %q", c.actor, c.groups, claim, s.groups)},
		"no_role"
}

// reload replaces the authenticator's tokens and OIDC groups with the
// file's. A file that is not valid changes nothing and is the error.
// Nothing else of the oidc section changes while the hub runs (the issuer,
// the client, the claims): restart reports that it differs from what the
// hub started with.
func (a *authenticator) reload(f TokenFile) (restart bool, err error) {
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
// file every tokenFilePoll and hands a changed one to reload.
type tokenFile struct {
	path string
	auth *authenticator
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
			f.log.ErrorContext(ctx, "the tokens file cannot be read; the hub keeps the tokens it has", "err", err)
		}
		return
	}
	f.failed = ""
	sum := sha256.Sum256(b)
	if sum == f.last {
		return
	}
	f.last = sum
	tf, err := parseTokenFile(f.path, b)
	restart := false
	if err == nil {
		restart, err = f.auth.reload(tf)
	}
	if err != nil {
		f.log.ErrorContext(ctx, "the tokens file changed and is not valid; the hub keeps the tokens it had that the file still holds", "path", f.path, "err", err)
		return
	}
	f.log.InfoContext(ctx, "the tokens file changed; its tokens and OIDC groups apply now", "path", f.path, "tokens", len(tf.Tokens))
	if restart {
		f.log.WarnContext(ctx, "the tokens file's oidc section changed beyond its groups; that takes a restart of the hub", "path", f.path)
	}
}

// WithTokenFile makes the hub take its tokens and its OIDC section from
// the tokens file at path, and follow the file while it runs: each replica
// reads it again every second, and a change to its tokens (one added,
// removed, or given another role or scope) or to its OIDC groups applies
// at once to calls and to the dashboard sessions made with them. The other
// settings of the oidc section take a restart. New's tokens and WithOIDC
// must not be given with it.
func WithTokenFile(path string) Option { return func(o *options) { o.tokenFile = path } }

// tokenSource returns the tokens and OIDC section the hub starts with, and
// the follower of its tokens file, if it has one.
func (o *options) tokenSource(tokens []Token) ([]Token, *OIDC, *tokenFile, error) {
	if o.tokenFile == "" {
		return tokens, o.oidc, nil, nil
	}
	if len(tokens) > 0 || o.oidc != nil {
		return nil, nil, nil, errors.New("give the tokens either to New and WithOIDC, or by WithTokenFile, not both")
	}
	b, err := os.ReadFile(o.tokenFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tokens file: %w", err)
	}
	f, err := parseTokenFile(o.tokenFile, b)
	if err != nil {
		return nil, nil, nil, err
	}
	return f.Tokens, f.OIDC, &tokenFile{path: o.tokenFile, log: o.log, last: sha256.Sum256(b)}, nil
}

// parseTokenFile parses the content b of the tokens file at path.
func parseTokenFile(path string, b []byte) (TokenFile, error) {
	var f TokenFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return f, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return f, nil
}

// printable reports whether s is UTF-8 of printable characters only, as
// unicode.IsPrint has them (letters, marks, numbers, punctuation, symbols
// and the ASCII space). A name the audit records as an actor holds no
// line break, control character, escape sequence or invisible formatting
// (a right-to-left override, a zero-width space) that could fake a line of
// a log or hide what it says.
func printable(s string) bool {
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
	out := &tokenSet{byHash: map[[sha256.Size]byte]*principal{}, groups: s.groups, roles: s.roles}
	for h, p := range s.byHash {
		if held[hex.EncodeToString(h[:])] {
			out.byHash[h] = p
		}
	}
	return out
}
