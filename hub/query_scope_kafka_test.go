//go:build integration

package hub_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/schemas"
)

// TestLiveQuestionsStayInScope: a token limited to some clusters, or to
// some projects, asks about Applications one step outside them. A live
// question is a read, so, as the read API does, the hub answers as if
// they did not exist: the same 404, word for word, as for a cluster never
// registered or an Application that is not there, and no question
// reaches the log. Inside its scope the same token's question is asked.
func TestLiveQuestionsStayInScope(t *testing.T) {
	r := newRig(t, 4)
	r.addToken("staging-viewer", auth.RoleViewer, nil, "env=staging")
	r.addToken("team-a-viewer", auth.RoleViewer, []string{"team-a"}, "")
	url := r.start()
	root := r.client(url, "root")
	r.twoTeams(root)
	for name, project := range map[string]string{"pay": "team-a", "mail": "team-b"} {
		if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod", "staging"}, Manifest: appIn(name, project)},
			api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	questions := r.questions(t)
	tree := func(actor, cluster, name string) error {
		_, err := r.client(url, actor).Tree(t.Context(), cluster, "argocd", name, time.Second)
		return err
	}
	same := func(what string, got, want error, replace ...string) {
		t.Helper()
		g, w := fmt.Sprint(got), strings.NewReplacer(replace...).Replace(fmt.Sprint(want))
		if api.StatusOf(got) != http.StatusNotFound || g != w {
			t.Errorf("%s: %d %q\nwant the 404 of what does not exist: %q", what, api.StatusOf(got), g, w)
		}
	}
	same("staging-viewer, prod's pay", tree("staging-viewer", "prod", "pay"), tree("staging-viewer", "nowhere", "pay"), "nowhere", "prod")
	same("staging-viewer, prod's absent app", tree("staging-viewer", "prod", "absent"), tree("staging-viewer", "nowhere", "absent"), "nowhere", "prod")
	same("team-a-viewer, staging's mail (team-b)", tree("team-a-viewer", "staging", "mail"), tree("team-a-viewer", "staging", "absent"), "absent", "mail")
	// A role too low is refused first, with words that name no target.
	logs := func(cluster string) error {
		_, err := r.client(url, "staging-viewer").Logs(t.Context(), cluster, "argocd", "pay", "web", "web-1", api.LogOptions{}, time.Second)
		return err
	}
	if prod, nowhere := logs("prod"), logs("nowhere"); api.StatusOf(prod) != http.StatusForbidden || fmt.Sprint(prod) != fmt.Sprint(nowhere) {
		t.Errorf("staging-viewer, logs of prod's pay: %v; of a cluster never registered: %v; want one 403", prod, nowhere)
	}
	select {
	case q := <-questions:
		t.Fatalf("a question outside the token's scope reached the log: %+v", q)
	case <-time.After(time.Second):
	}

	if err := tree("staging-viewer", "staging", "pay"); api.StatusOf(err) != http.StatusGatewayTimeout {
		t.Errorf("staging-viewer, staging's pay: %v, want it asked (504: no agent answers)", err)
	}
	if err := tree("team-a-viewer", "prod", "pay"); api.StatusOf(err) != http.StatusGatewayTimeout {
		t.Errorf("team-a-viewer, prod's pay: %v, want it asked (504: no agent answers)", err)
	}
}

// TestFiftyQuestionsAtOnce: fifty calls ask cluster a about its
// Application at once; its agent answers them in another order, and each
// call gets the answer to its own question.
func TestFiftyQuestionsAtOnce(t *testing.T) {
	r, url, signers := liveRig(t)
	root := r.client(url, "root")
	questions := r.questions(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := root.Tree(t.Context(), "a", "argocd", "web", 30*time.Second)
			switch {
			case err != nil:
				errs <- err
			case !strings.Contains(string(a.Answer), a.RequestID):
				errs <- fmt.Errorf("the answer to %s is %s", a.RequestID, a.Answer)
			}
		}()
	}
	var asked []*schemas.QueryRequested
	for len(asked) < n {
		select {
		case q := <-questions:
			asked = append(asked, q)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d questions reached the log, want %d", len(asked), n)
		}
	}
	for i := len(asked) - 1; i >= 0; i-- { // newest first
		q := asked[i]
		r.answer(t, signers["a"], "a", q, fmt.Sprintf(`{"nodes":[{"kind":"ConfigMap","name":%q}]}`, q.RequestID), "")
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		t.Error(err)
	}
}
