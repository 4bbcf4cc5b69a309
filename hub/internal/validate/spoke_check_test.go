package validate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/util/git"

	"github.com/argosyproj/argosy/internal/argocd"
)

// The spoke checks an Application against its AppProject before applying
// it, with a small version of Argo CD's rules of its own
// (argocd.CheckProject): the spoke may not link Argo CD. This package is
// the one that links it, so the two are compared here.

// spokeRefuses is what argocd.CheckProject refuses of an Application from
// repo to server and namespace, in a project with sourceRepos and
// destinations: "source", "destination", both or none.
func spokeRefuses(t *testing.T, repo, server, namespace string, sourceRepos []string, dests []v1alpha1.ApplicationDestination) (source, dest bool) {
	t.Helper()
	app, err := json.Marshal(map[string]any{"project": "p", "source": map[string]any{"repoURL": repo, "path": "."},
		"destination": map[string]any{"server": server, "namespace": namespace}})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := json.Marshal(v1alpha1.AppProjectSpec{SourceRepos: sourceRepos, Destinations: dests})
	if err != nil {
		t.Fatal(err)
	}
	err = argocd.CheckProject(proj, app)
	if err == nil {
		return false, false
	}
	return strings.Contains(err.Error(), "spec.source.repoURL"), strings.Contains(err.Error(), "spec.destination")
}

func argoProject(sourceRepos []string, dests []v1alpha1.ApplicationDestination) v1alpha1.AppProject {
	p := v1alpha1.AppProject{Spec: v1alpha1.AppProjectSpec{SourceRepos: sourceRepos, Destinations: dests}}
	p.Name = "p"
	return p
}

func noClusters(string) ([]*v1alpha1.Cluster, error) { return nil, nil }

// answer runs one of Argo CD's checks; ok is false where its glob matcher
// panics (gobwas/glob does on some patterns with a { left open): there is
// no answer to agree with.
func answer(check func() bool) (permitted, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return check(), true
}

func destinationPermitted(p v1alpha1.AppProject, dst v1alpha1.ApplicationDestination) func() bool {
	return func() bool {
		ok, err := p.IsDestinationPermitted(dst, noClusters)
		return ok && err == nil
	}
}

// FuzzSpokeProjectCheck compares the spoke's check with Argo CD's
// (v2.14.21) on a repository and two sourceRepos entries, and on a
// destination and two entries of destinations:
//   - the repository is refused exactly when Argo CD refuses it (the glob
//     patterns with / as separator);
//   - a destination given by server, in a project whose entries name no
//     cluster, is refused exactly when Argo CD refuses it (the glob
//     patterns without separator, and "!" entries);
//   - with names in the entries, Argo CD matches them against the name it
//     infers for the server (inferred here): whatever that name, the spoke
//     refuses only what Argo CD refuses.
func FuzzSpokeProjectCheck(f *testing.F) {
	for _, s := range [][11]string{
		{"https://git.example/org/a.git", "*", "", "https://kubernetes.default.svc", "web", "*", "*", "", "", "", "in-cluster"},
		{"https://git.example/org/a.git", "https://git.example/org/*", "!https://git.example/org/b", "https://kubernetes.default.svc", "web-1",
			"https://kubernetes.default.svc", "web-*", "", "", "", "in-cluster"},
		{"git@git.example:org/a.git", "ssh://git@git.example/org/**", "", "https://10.0.0.1:6443", "kube-system", "*", "*", "*", "!kube-system", "", "prod"},
		{"https://Git.Example/Org/A", "https://git.example/org/[a-c]", "https://git.example/{x,y}", "https://a", "ns", "*", "*", "!https://a", "*", "!prod", "prod"},
		{"https://git.example/a.git", "!*", "https://git.example/[!a]", "https://a", "n", "https://?", "{n,m}", "", "", "*", "x"},
		{"https://git.example/a", `https://git.example/\a`, "https://git.example/[a-]", "https://a", "n", "**", "[", "!", "n", "in-*", "in-cluster"},
		{"", "", "*", "https://a", "", "", "", "", "", "!", "x"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10])
	}
	f.Fuzz(func(t *testing.T, repo, repo1, repo2, server, namespace, server1, namespace1, server2, namespace2, name2, inferred string) {
		for _, s := range []string{repo, repo1, repo2, server, namespace, server1, namespace1, server2, namespace2, name2, inferred} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				return // gobwas/glob reads a NUL as the end; nothing in a project holds one
			}
		}
		if server == "" || inferred == "" {
			return // a destination names its server here; Argo CD infers a name for it or refuses it
		}
		for _, s := range []string{repo1, repo2, server1, namespace1, server2, namespace2, name2} {
			if strings.ContainsAny(s, "{[") {
				// gobwas/glob's optimizer gives some combinations of
				// alternatives and classes answers of their own (a{b*b}
				// matches ab): TestSpokeProjectPatterns compares them.
				return
			}
		}
		for _, s := range []string{repo1, repo2} {
			if strings.Contains(s, "***") {
				// Where * stops at /, gobwas/glob's tree for ** then *
				// matches no empty run (***0 does not match 0): Argo CD
				// refuses a few repositories the spoke permits, which
				// the spoke then acknowledges and Argo CD flags, as it
				// did before the spoke checked projects.
				return
			}
		}
		if git.NormalizeGitURL(repo) == "" || namespace == "" {
			// gobwas/glob matches "" with a pattern that is one ? or one
			// [!…] alone (its compiler's single-character matchers take
			// an empty string for U+FFFD); the spoke does not. Argo CD
			// refuses a repository it cannot parse anyway, and no
			// project's namespace is one ?.
			return
		}
		sourceRepos := []string{repo1, repo2}
		dests := []v1alpha1.ApplicationDestination{{Server: server1, Namespace: namespace1}, {Server: server2, Namespace: namespace2}}
		spokeSource, spokeDest := spokeRefuses(t, repo, server, namespace, sourceRepos, dests)
		p := argoProject(sourceRepos, dests)
		src := v1alpha1.ApplicationSource{RepoURL: repo}
		if ok, answered := answer(func() bool { return p.IsSourcePermitted(src) }); answered && spokeSource != !ok {
			t.Errorf("repository %q in sourceRepos %q: the spoke refuses it %v, Argo CD %v", repo, sourceRepos, spokeSource, !ok)
		}
		dst := v1alpha1.ApplicationDestination{Server: server, Name: inferred, Namespace: namespace}
		if ok, answered := answer(destinationPermitted(p, dst)); answered && spokeDest != !ok {
			t.Errorf("destination %q %q (named %q) in %+v: the spoke refuses it %v, Argo CD %v", server, namespace, inferred, dests, spokeDest, !ok)
		}

		dests = []v1alpha1.ApplicationDestination{{Server: server1, Namespace: namespace1}, {Name: name2, Namespace: namespace2}}
		_, spokeDest = spokeRefuses(t, repo, server, namespace, sourceRepos, dests)
		p = argoProject(sourceRepos, dests)
		if ok, answered := answer(destinationPermitted(p, dst)); answered && spokeDest && ok {
			t.Errorf("destination %q %q (named %q) in %+v: the spoke refuses it, Argo CD permits it", server, namespace, inferred, dests)
		}
	})
}

// TestSpokeProjectPatterns compares the spoke's matching of classes and
// alternatives, which the fuzz test leaves out, with Argo CD's, on
// namespaces (no separator) and on repositories (/ as separator).
func TestSpokeProjectPatterns(t *testing.T) {
	namespaces := []string{"web", "web-1", "web-a", "webx", "db", "w", "", "a-b", "kube-system", "team-prod", "x/y"}
	repos := []string{"https://git.example/org/a", "https://git.example/org/b.git", "https://git.example/org/team/a",
		"https://git.example/org/", "git@git.example:org/a.git", "https://git.example/other/a"}
	patterns := []string{"web-[0-9]", "web-[!0-9]", "web[-x]*", "{web,db}", "{web,db}-*", "{w{e,x}b,db}", "w[a-z]b", "[!a-z]*",
		"{web", "web}", "web,db", "[a-]", "[]", "[!]", `web\-1`, `[\-]`, "{,web}", "w?b", "*-*", "**-**",
		"https://git.example/org/{a,b}", "https://git.example/org/[ab]", "https://git.example/org/[!a]", "https://git.example/{org,other}/*",
		"https://git.example/org/{*,team/*}", "https://git.example/*/a", "git@git.example/org/[a-c]"}
	for _, pattern := range patterns {
		for _, entry := range []string{pattern, "!" + pattern} {
			for _, ns := range namespaces {
				dests := []v1alpha1.ApplicationDestination{{Server: "*", Namespace: entry}}
				if ns != "" && !strings.HasPrefix(entry, "!") {
					dests = append(dests, v1alpha1.ApplicationDestination{Server: "https://other", Namespace: "*"})
				}
				_, spoke := spokeRefuses(t, "https://git.example/a", "https://kubernetes.default.svc", ns, []string{"*"}, dests)
				p := argoProject([]string{"*"}, dests)
				dst := v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: ns}
				if ok, answered := answer(destinationPermitted(p, dst)); answered && spoke != !ok {
					t.Errorf("namespace %q, entry %q: the spoke refuses it %v, Argo CD %v", ns, entry, spoke, !ok)
				}
			}
			for _, repo := range repos {
				sourceRepos := []string{entry}
				if strings.HasPrefix(entry, "!") {
					sourceRepos = append(sourceRepos, "*")
				}
				spoke, _ := spokeRefuses(t, repo, "https://kubernetes.default.svc", "web", sourceRepos, []v1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}})
				p := argoProject(sourceRepos, nil)
				src := v1alpha1.ApplicationSource{RepoURL: repo}
				if ok, answered := answer(func() bool { return p.IsSourcePermitted(src) }); answered && spoke != !ok {
					t.Errorf("repository %q, sourceRepos %q: the spoke refuses it %v, Argo CD %v", repo, sourceRepos, spoke, !ok)
				}
			}
		}
	}
}
