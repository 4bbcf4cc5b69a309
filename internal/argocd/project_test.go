package argocd

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, value string
		sep            rune
		want           bool
	}{
		{"", "", 0, true},
		{"", "a", 0, false},
		{"web", "web", 0, true},
		{"web", "web2", 0, false},
		{"web*", "web-prod", 0, true},
		{"*-prod", "web-prod", 0, true},
		{"*-prod", "web-prod2", 0, false},
		{"w?b", "web", 0, true},
		{"w?b", "wb", 0, false},
		{"*", "a/b", 0, true},
		{"*", "a/b", '/', false},
		{"**", "a/b", '/', true},
		{"https://github.com/org/*", "https://github.com/org/repo", '/', true},
		{"https://github.com/org/*", "https://github.com/org/team/repo", '/', false},
		{"https://github.com/org/**", "https://github.com/org/team/repo", '/', true},
		{"a?c", "a/c", '/', false},
		{"[abc]x", "bx", 0, true},
		{"[abc]x", "dx", 0, false},
		{"[!abc]x", "dx", 0, true},
		{"[!abc]x", "ax", 0, false},
		{"[a-c]x", "bx", 0, true},
		{"[a-c]x", "dx", 0, false},
		{"[!a-c]x", "dx", 0, true},
		{"[a-c]", "/", '/', false},
		{"[!a-c]", "/", '/', true},  // a class is not stopped by the separator
		{"[ab-c]", "-", 0, true},    // one range only: the rest is a list
		{"[a-zA-Z]", "a", 0, false}, // refused: one range per class
		{"[c-a]", "b", 0, false},    // refused: backwards
		{"[]", "]", 0, false},       // refused: empty
		{"[abc", "a", 0, false},     // refused: not closed
		{"{dev,test}-*", "test-1", 0, true},
		{"{dev,test}-*", "prod-1", 0, false},
		{"{dev,{qa,uat}}", "uat", 0, true},
		{"{a,", "", 0, true}, // an unclosed { closes at the end
		{"a,b}", "a,b}", 0, true},
		{`\*`, "*", 0, true},
		{`\*`, "x", 0, false},
		{`a\`, "a", 0, true},
		{"a.b", "axb", 0, false}, // no regular expression leaks through
		{"(a|b)", "a", 0, false},
		{"naïve-*", "naïve-1", 0, true},
		// gobwas/glob checks text*text as a prefix and a suffix, which
		// may overlap; where * stops at the separator, it does not.
		{"team-*-prod", "team-prod", 0, true},
		{"team-*-prod", "team-x-prod", 0, true},
		{"team-*-prod", "team-pro", 0, false},
		{"a**a", "a", '/', true},
		{"a*a", "a", '/', false},
		{"a*a", "a/a", '/', false},
		{`a\*a`, "a", 0, false},
		{`a*a\`, "a", 0, true}, // a \ at the end escapes nothing
	} {
		if got := glob(c.pattern, c.value, c.sep); got != c.want {
			t.Errorf("glob(%q, %q, %q) = %v, want %v", c.pattern, c.value, c.sep, got, c.want)
		}
	}
}

func TestNormalizeRepo(t *testing.T) {
	for in, want := range map[string]string{
		"https://GitHub.com/Org/Repo.git":    "https://github.com/org/repo",
		"  https://github.com/org/repo  ":    "https://github.com/org/repo",
		"git@github.com:org/repo.git":        "git@github.com/org/repo",
		"ssh://git@github.com/org/repo.git":  "git@github.com/org/repo",
		"https://github.com/org/*":           "https://github.com/org/*",
		"*":                                  "*",
		"https://user@github.com/org/r":      "https://user@github.com/org/r",
		"https://github.com/org/repo.gitops": "https://github.com/org/repo.gitops",
		"https://[bad":                       "",
	} {
		if got := normalizeRepo(in); got != want {
			t.Errorf("normalizeRepo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSourcePermitted(t *testing.T) {
	for _, c := range []struct {
		name  string
		repo  string
		repos []string
		want  bool
	}{
		{"none permitted", "https://git.example/a.git", nil, false},
		{"any", "https://git.example/a.git", []string{"*"}, true},
		{"exact", "https://git.example/a.git", []string{"https://git.example/a.git"}, true},
		{"exact without .git and in another case", "https://Git.Example/A.git", []string{"https://git.example/a"}, true},
		{"another repository", "https://git.example/b.git", []string{"https://git.example/a.git"}, false},
		{"glob in one segment", "https://git.example/org/a.git", []string{"https://git.example/org/*"}, true},
		{"glob does not cross a slash", "https://git.example/org/team/a.git", []string{"https://git.example/org/*"}, false},
		{"** crosses slashes", "https://git.example/org/team/a.git", []string{"https://git.example/org/**"}, true},
		{"ssh forms alike", "git@git.example:org/a.git", []string{"ssh://git@git.example/org/a"}, true},
		{"denied", "https://git.example/org/secret.git", []string{"*", "!https://git.example/org/secret"}, false},
		{"denied before permitted", "https://git.example/org/secret.git", []string{"!https://git.example/org/secret", "*"}, false},
		{"not denied", "https://git.example/org/a.git", []string{"*", "!https://git.example/org/secret"}, true},
		{"deny alone permits the rest", "https://git.example/org/a.git", []string{"!https://git.example/org/secret"}, true},
		{"deny alone", "https://git.example/org/secret", []string{"!https://git.example/org/secret"}, false},
		{"denied by glob", "https://git.example/org/x/a.git", []string{"*", "!https://git.example/org/x/*"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sourcePermitted(c.repo, c.repos); got != c.want {
				t.Errorf("sourcePermitted(%q, %q) = %v, want %v", c.repo, c.repos, got, c.want)
			}
		})
	}
}

func TestDestinationPermitted(t *testing.T) {
	const inCluster = "https://kubernetes.default.svc"
	srv := func(ns string) destination { return destination{Server: inCluster, Namespace: ns} }
	named := func(name, ns string) destination { return destination{Name: name, Namespace: ns} }
	for _, c := range []struct {
		name    string
		dst     destination
		allowed []destination
		scoped  bool
		want    tri
	}{
		{"no destinations", srv("web"), nil, false, no},
		{"anything", srv("web"), []destination{{Server: "*", Namespace: "*"}}, false, yes},
		{"server and namespace", srv("web"), []destination{srv("web")}, false, yes},
		{"another namespace", srv("db"), []destination{srv("web")}, false, no},
		{"namespace glob", srv("web-prod"), []destination{srv("web-*")}, false, yes},
		{"another server", destination{Server: "https://other:6443", Namespace: "web"}, []destination{srv("*")}, false, no},
		{"a name matches any server", srv("web"), []destination{{Name: "*", Namespace: "web"}}, false, yes},
		{"by name", named("in-cluster", "web"), []destination{named("in-cluster", "web")}, false, yes},
		{"by name, another namespace", named("in-cluster", "db"), []destination{named("in-cluster", "web")}, false, no},
		// The cluster's name is Argo CD's to know when the Application
		// names its server, and its server when it names the cluster.
		{"server against a name", srv("web"), []destination{named("in-cluster", "web")}, false, unknown},
		{"name against a server", named("in-cluster", "web"), []destination{srv("web")}, false, unknown},
		{"name against any server", named("in-cluster", "web"), []destination{{Server: "*", Namespace: "web"}}, false, yes},
		{"server against a name, another namespace", srv("db"), []destination{named("in-cluster", "web")}, false, no},
		{"namespace denied", srv("kube-system"), []destination{srv("*"), srv("!kube-system")}, false, no},
		{"namespace not denied", srv("web"), []destination{srv("*"), srv("!kube-system")}, false, yes},
		{"server denied", srv("web"), []destination{{Server: "*", Namespace: "*"}, {Server: "!" + inCluster, Namespace: "*"}}, false, no},
		{"a name deny the server may not escape", srv("web"), []destination{{Server: "*", Namespace: "*"}, {Name: "!prod", Namespace: "*"}}, false, unknown},
		{"only the project's clusters", srv("web"), []destination{srv("*")}, true, unknown},
		{"only the project's clusters, refused", srv("db"), []destination{srv("web")}, true, no},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := projSpec{Destinations: c.allowed, PermitOnlyProjectScopedClusters: c.scoped}
			if got := p.destinationPermitted(c.dst); got != c.want {
				t.Errorf("%v in %v: %v, want %v", c.dst, c.allowed, got, c.want)
			}
		})
	}
}

func TestCheckProject(t *testing.T) {
	const project = `{"sourceRepos":["https://git.example/apps/*"],
		"destinations":[{"server":"https://kubernetes.default.svc","namespace":"web-*"}]}`
	app := func(source, dest string) string {
		return `{"project":"team",` + source + `,"destination":` + dest + `}`
	}
	const (
		good  = `"source":{"repoURL":"https://git.example/apps/web.git","path":"."}`
		here  = `{"server":"https://kubernetes.default.svc","namespace":"web-prod"}`
		other = `{"server":"https://kubernetes.default.svc","namespace":"db"}`
	)
	for _, c := range []struct {
		name, project, app string
		want               []string // what the refusal names; none: permitted
	}{
		{"permitted", project, app(good, here), nil},
		{"repository", project, app(`"source":{"repoURL":"https://git.example/other.git"}`, here),
			[]string{`spec.source.repoURL: repository "https://git.example/other.git" is not permitted by AppProject "team"`, "https://git.example/apps/*"}},
		{"one of several sources", project, app(`"sources":[{"repoURL":"https://git.example/apps/a"},{"repoURL":"https://git.example/b"}]`, here),
			[]string{`spec.sources[1].repoURL: repository "https://git.example/b"`}},
		{"sources, not source", project, app(`"source":{"repoURL":"https://git.example/b"},"sources":[{"repoURL":"https://git.example/apps/a"}]`, here), nil},
		{"the hydrator's dry source", project,
			app(`"sourceHydrator":{"drySource":{"repoURL":"https://git.example/b"}},"source":{"repoURL":"https://git.example/apps/a"}`, here),
			[]string{`spec.sourceHydrator.drySource.repoURL: repository "https://git.example/b"`}},
		{"destination", project, app(good, other),
			[]string{`spec.destination: server "https://kubernetes.default.svc" namespace "db" is not permitted by AppProject "team"`,
				"its destinations: server https://kubernetes.default.svc namespace web-*"}},
		{"both", project, app(`"source":{"repoURL":"https://git.example/b"}`, other), []string{"spec.source.repoURL", "; spec.destination"}},
		{"no destination", project, app(good, `{"namespace":"web-prod"}`), []string{"spec.destination: give server"}},
		{"server and name", project, app(good, `{"server":"https://kubernetes.default.svc","name":"in-cluster","namespace":"web-prod"}`),
			[]string{"not both"}},
		{"a project with an empty spec", `{}`, app(good, here), []string{"its sourceRepos: none", "its destinations: none"}},
		{"a project with no spec", ``, app(good, here), []string{"its sourceRepos: none"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckProject([]byte(c.project), []byte(c.app))
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("permitted, want refused naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not name %q", err, w)
				}
			}
		})
	}
}
