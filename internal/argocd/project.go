package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An Application is checked against its AppProject before it is applied,
// the way Argo CD's controller checks it (v2.14: ValidatePermissions,
// AppProject.IsSourcePermitted and IsDestinationPermitted): Argo CD keeps
// an Application it refuses, with an InvalidSpecError condition, and never
// runs it, so such a change is rejected here rather than acknowledged as
// applied. What only Argo CD can see (which clusters it has, by name and
// server; a project's own clusters) it still decides on the cluster.

// DefaultProject is the project of an Application that names none.
const DefaultProject = "default"

// checkProject refuses, with a PermanentError, an Application whose
// AppProject is missing from the Application's namespace (Argo CD's, the
// only one the agent writes Applications to) or does not permit its
// sources or destination. A failure to read the AppProject is returned as
// it is, so that a transient one is retried.
func (a *Client) checkProject(ctx context.Context, obj *Object) error {
	var spec appSpec
	if err := json.Unmarshal(obj.Spec, &spec); err != nil {
		return &PermanentError{Err: fmt.Errorf("application %s/%s: spec: %w", obj.Namespace, obj.Name, err)}
	}
	name := spec.project()
	ri, err := a.resource(KindAppProject, obj.Namespace)
	if err != nil {
		return err
	}
	proj, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &PermanentError{Err: fmt.Errorf("application %s/%s: spec.project: AppProject %q does not exist in namespace %q (%w), "+
			"so Argo CD would not run the Application: apply the AppProject to the cluster first, or name one that exists",
			obj.Namespace, obj.Name, name, obj.Namespace, err)}
	case err != nil:
		return fmt.Errorf("application %s/%s: read its AppProject %q: %w", obj.Namespace, obj.Name, name, err)
	}
	projectSpec, err := json.Marshal(proj.Object["spec"])
	if err != nil {
		return err
	}
	if err := CheckProject(projectSpec, obj.Spec); err != nil {
		return &PermanentError{Err: fmt.Errorf("application %s/%s: %w", obj.Namespace, obj.Name, err)}
	}
	return nil
}

// CheckProject returns why Argo CD would refuse to run an Application whose
// spec is app in its AppProject, whose spec is projectSpec: a source
// repository its sourceRepos do not permit, or a destination its
// destinations do not. Each reason names the field and what to do. It
// returns nil when Argo CD would take the Application, and when only Argo CD
// can tell: a destination given by server is matched against the
// project's names of clusters too (and one given by name against their
// servers), which Argo CD knows and the caller may not, and a project that
// permits only its own clusters (permitOnlyProjectScopedClusters) lists
// them where only Argo CD reads.
func CheckProject(projectSpec, app []byte) error {
	var spec appSpec
	if err := json.Unmarshal(app, &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	project := spec.project()
	var proj projSpec
	if len(projectSpec) > 0 && string(projectSpec) != "null" {
		if err := json.Unmarshal(projectSpec, &proj); err != nil {
			return fmt.Errorf("spec.project: AppProject %q has a spec Argo CD cannot read: %w", project, err)
		}
	}
	var refused []string
	for _, src := range spec.sources() {
		if !sourcePermitted(src.url, proj.SourceRepos) {
			refused = append(refused, fmt.Sprintf("%s: repository %q is not permitted by AppProject %q (its sourceRepos: %s): "+
				"add it to the project's sourceRepos, or deploy from a repository it permits", src.field, src.url, project, listOf(proj.SourceRepos)))
		}
	}
	d := spec.Destination
	switch {
	case d.Server == "" && d.Name == "":
		refused = append(refused, "spec.destination: give server (https://kubernetes.default.svc for the cluster Argo CD runs in) or name")
	case d.Server != "" && d.Name != "":
		refused = append(refused, "spec.destination: give server or name, not both")
	case proj.destinationPermitted(d) == no:
		refused = append(refused, fmt.Sprintf("spec.destination: %s is not permitted by AppProject %q (its destinations: %s): "+
			"add it to the project's destinations, or deploy where the project permits", d, project, destinations(proj.Destinations)))
	}
	if len(refused) > 0 {
		return errors.New(strings.Join(refused, "; "))
	}
	return nil
}

// appSpec is what the check reads of an Application's spec.
type appSpec struct {
	Project string `json:"project"`
	Source  *struct {
		RepoURL string `json:"repoURL"`
	} `json:"source"`
	Sources []struct {
		RepoURL string `json:"repoURL"`
	} `json:"sources"`
	SourceHydrator *struct {
		DrySource struct {
			RepoURL string `json:"repoURL"`
		} `json:"drySource"`
	} `json:"sourceHydrator"`
	Destination destination `json:"destination"`
}

func (s *appSpec) project() string {
	if s.Project == "" {
		return DefaultProject
	}
	return s.Project
}

type source struct{ field, url string }

// sources are the repositories Argo CD checks: the hydrator's dry source
// if there is one, else every one of spec.sources if any, else
// spec.source's.
func (s *appSpec) sources() []source {
	switch {
	case s.SourceHydrator != nil:
		return []source{{"spec.sourceHydrator.drySource.repoURL", s.SourceHydrator.DrySource.RepoURL}}
	case len(s.Sources) > 0:
		out := make([]source, 0, len(s.Sources))
		for i, src := range s.Sources {
			out = append(out, source{fmt.Sprintf("spec.sources[%d].repoURL", i), src.RepoURL})
		}
		return out
	case s.Source != nil:
		return []source{{"spec.source.repoURL", s.Source.RepoURL}}
	}
	return []source{{"spec.source.repoURL", ""}}
}

// projSpec is what the check reads of an AppProject's spec.
type projSpec struct {
	SourceRepos                     []string      `json:"sourceRepos"`
	Destinations                    []destination `json:"destinations"`
	PermitOnlyProjectScopedClusters bool          `json:"permitOnlyProjectScopedClusters"`
}

// destination is an Application's destination or one a project permits.
type destination struct {
	Server    string `json:"server"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func (d destination) String() string {
	if d.Server != "" {
		return fmt.Sprintf("server %q namespace %q", d.Server, d.Namespace)
	}
	return fmt.Sprintf("cluster name %q namespace %q", d.Name, d.Namespace)
}

func listOf(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

func destinations(ds []destination) string {
	if len(ds) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		var where []string
		if d.Server != "" {
			where = append(where, "server "+d.Server)
		}
		if d.Name != "" {
			where = append(where, "name "+d.Name)
		}
		out = append(out, strings.Join(append(where, "namespace "+d.Namespace), " "))
	}
	return strings.Join(out, ", ")
}

// sourcePermitted reports whether sourceRepos permit repoURL. Both sides
// are compared normalized (normalizeRepo) with glob patterns in which * and
// ? stop at a slash; an entry starting with "!" denies what its pattern
// matches, and a denial wins over any entry that permits.
func sourcePermitted(repoURL string, sourceRepos []string) bool {
	repo := normalizeRepo(repoURL)
	permitted := false
	for _, entry := range sourceRepos {
		pattern := normalizeRepo(entry)
		if rest, ok := strings.CutPrefix(entry, "!"); ok {
			pattern = "!" + normalizeRepo(rest)
		}
		switch {
		case match(pattern, repo, '/'):
			permitted = true
		case strings.HasPrefix(pattern, "!"):
			return false
		}
	}
	return permitted
}

// scpLike is a repository address with a user before an @ (git@host:org/r),
// with or without ssh://.
var scpLike = regexp.MustCompile(`^(ssh://)?[^/:]*?@[^@]+$`)

// normalizeRepo is a repository address in the one form Argo CD compares:
// lower case without surrounding space, an SSH address as host/path
// (git@host:org/r and ssh://git@host/org/r both as git@host/org/r),
// without a trailing .git, and as net/url writes it back. An address
// net/url cannot parse is "".
func normalizeRepo(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if scpLike.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	u, err := url.Parse(strings.TrimSuffix(repo, ".git"))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// match reports whether value matches an entry of a project: a glob
// pattern (see globRegexp; "*" matches everything), which a leading "!"
// negates.
func match(pattern, value string, sep rune) bool {
	if rest, ok := strings.CutPrefix(pattern, "!"); ok {
		return !glob(rest, value, sep)
	}
	return pattern == "*" || glob(pattern, value, sep)
}

func glob(pattern, value string, sep rune) bool {
	if prefix, suffix, ok := prefixSuffix(pattern, sep); ok {
		return strings.HasPrefix(value, prefix) && strings.HasSuffix(value, suffix)
	}
	re, ok := globRegexp(pattern, sep)
	return ok && re.MatchString(value)
}

// prefixSuffix splits a pattern that is text, a run of * that crosses
// separators (any run if sep is 0, else **), and text. gobwas/glob checks
// such a pattern as a prefix and a suffix, which may overlap: in Argo CD,
// team-*-prod matches team-prod. So it does here.
func prefixSuffix(pattern string, sep rune) (prefix, suffix string, ok bool) {
	rs := []rune(pattern)
	start := slices.Index(rs, '*')
	if start <= 0 {
		return "", "", false
	}
	end := start
	for end < len(rs) && rs[end] == '*' {
		end++
	}
	if end == len(rs) || (sep != 0 && end-start != 2) {
		return "", "", false
	}
	prefix, n := globText(rs[:start], false)
	if n != start {
		return "", "", false
	}
	suffix, n = globText(rs[end:], false)
	if n != len(rs)-end || prefix == "" || suffix == "" || rs[start-1] == '\\' {
		return "", "", false
	}
	return prefix, suffix, true
}

// tri is a truth value that this side of Argo CD may not know.
type tri int8

const (
	no tri = iota
	yes
	unknown
)

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

func not(a tri) tri {
	switch a {
	case yes:
		return no
	case no:
		return yes
	}
	return unknown
}

func and(a, b tri) tri {
	switch {
	case a == no || b == no:
		return no
	case a == yes && b == yes:
		return yes
	}
	return unknown
}

func or(a, b tri) tri { return not(and(not(a), not(b))) }

// destinationPermitted is whether the project's destinations permit dst.
// Argo CD gives every destination both a server and a name before it
// checks (the one not given is inferred from its clusters, and a cluster it
// does not have is refused anyway), and an entry of the project permits it
// when either matches and the namespace does. An entry with a "!" pattern
// that does not match forbids it (for a server or name, if the namespace
// matches; for a namespace, if the server matches), whatever the other
// entries say. The side not given is unknown here, unless the entry's
// pattern decides it for any cluster.
func (p *projSpec) destinationPermitted(dst destination) tri {
	matched, denied := no, no
	for _, d := range p.Destinations {
		server, name := side(d.Server, dst.Server), side(d.Name, dst.Name)
		ns := truth(match(d.Namespace, dst.Namespace, 0))
		m := and(or(server, name), ns)
		deny := or(and(not(name), truth(isDeny(d.Name))), and(and(not(server), truth(isDeny(d.Server))), ns))
		deny = or(deny, and(and(not(ns), truth(isDeny(d.Namespace))), server))
		matched, denied = or(matched, m), or(denied, and(not(m), deny))
	}
	ok := and(matched, not(denied))
	if ok == yes && p.PermitOnlyProjectScopedClusters {
		return unknown // and one of the project's own clusters: Argo CD knows them
	}
	return ok
}

func isDeny(pattern string) bool { return strings.HasPrefix(pattern, "!") }

// side is whether pattern matches a destination's server or name, given
// (when not "") or inferred by Argo CD from its clusters (never "").
func side(pattern, given string) tri {
	if given != "" {
		return truth(match(pattern, given, 0))
	}
	rest, deny := strings.CutPrefix(pattern, "!")
	m := unknown
	switch {
	case rest == "":
		m = no // an empty pattern matches only ""
	case strings.Trim(rest, "*") == "":
		m = yes // * and ** match anything
	}
	if deny {
		return not(m)
	}
	return m
}

// globRegexp translates a glob pattern into an anchored regular
// expression, in the syntax Argo CD matches projects' entries with
// (github.com/gobwas/glob's, which the spoke does not link):
//   - * matches any run of characters but sep (any at all if sep is 0),
//     ** any run at all, and ? one character but sep;
//   - [abc] and [a-z] match one character of a list or one range, [!…]
//     one outside it;
//   - {a,b} matches either pattern (an unclosed { closes at the end);
//   - \ takes the next character as it is;
//   - anything else matches itself.
//
// ok is false for a pattern that syntax refuses (a class not closed, empty
// or with a range backwards, text not UTF-8): it matches nothing.
func globRegexp(pattern string, sep rune) (re *regexp.Regexp, ok bool) {
	if !utf8.ValidString(pattern) {
		return nil, false
	}
	one := `(?s:.)`
	if sep != 0 {
		one = `[^` + regexp.QuoteMeta(string(sep)) + `]`
	}
	var b strings.Builder
	b.WriteString(`\A(?:`)
	rs, depth := []rune(pattern), 0
	for i := 0; i < len(rs); {
		switch r := rs[i]; {
		case r == '{':
			depth++
			b.WriteString(`(?:`)
			i++
		case r == ',' && depth > 0:
			b.WriteString(`|`)
			i++
		case r == '}' && depth > 0:
			depth--
			b.WriteString(`)`)
			i++
		case r == '?':
			b.WriteString(one)
			i++
		case r == '*' && i+1 < len(rs) && rs[i+1] == '*':
			b.WriteString(`(?s:.)*`)
			i += 2
		case r == '*':
			b.WriteString(one + `*`)
			i++
		case r == '[':
			class, n, ok := globClass(rs[i+1:])
			if !ok {
				return nil, false
			}
			b.WriteString(class)
			i += 1 + n
		default:
			text, n := globText(rs[i:], depth > 0)
			b.WriteString(regexp.QuoteMeta(text))
			i += n
		}
	}
	b.WriteString(strings.Repeat(`)`, depth) + `)\z`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// globText reads literal text from the start of rs up to the next special
// character (and, inside {…}, the next , or }), taking the character after
// a \ as it is. It returns the text and how many runes it read.
func globText(rs []rune, inAlternatives bool) (string, int) {
	var text []rune
	i := 0
	for ; i < len(rs); i++ {
		r := rs[i]
		if r == '\\' {
			if i++; i < len(rs) {
				text = append(text, rs[i])
			}
			continue
		}
		if r == '*' || r == '?' || r == '[' || r == '{' || (inAlternatives && (r == '}' || r == ',')) {
			break
		}
		text = append(text, r)
	}
	return string(text), min(i, len(rs)) // a \ at the end escapes nothing
}

// globClass reads a character class after its [, up to and with its ],
// as gobwas/glob reads one: an optional !, then either lo-hi (any two
// characters, taken as they are) or a list of characters (\ escapes
// one). It returns the class as a regular expression and how many runes it
// read.
func globClass(rs []rune) (class string, n int, ok bool) {
	neg := ""
	if len(rs) > 0 && rs[0] == '!' {
		neg, n = "^", 1
	}
	switch {
	case n+1 < len(rs) && rs[n+1] == '-':
		if n+3 >= len(rs) || rs[n+3] != ']' || rs[n+2] < rs[n] {
			return "", 0, false
		}
		return fmt.Sprintf(`[%s\x{%x}-\x{%x}]`, neg, rs[n], rs[n+2]), n + 4, true
	case n < len(rs) && rs[n] == ']':
		return "", 0, false // empty
	}
	var b strings.Builder
	for ; n < len(rs) && rs[n] != ']'; n++ {
		if rs[n] == '\\' {
			if n++; n == len(rs) {
				break
			}
		}
		fmt.Fprintf(&b, `\x{%x}`, rs[n])
	}
	if n == len(rs) || b.Len() == 0 {
		return "", 0, false // not closed, or empty
	}
	return "[" + neg + b.String() + "]", n + 1, true
}
