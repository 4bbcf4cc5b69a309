//go:build integration

package web_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/browsertest"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/system"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// heartbeat is the simulated spokes' heartbeat interval; staleAfter is the
// interval the dashboard assumes, generous so that a busy machine's late
// heartbeat does not make a running cluster Stale: a cluster is Stale 15 s
// after its last heartbeat.
const (
	heartbeat  = time.Second
	staleAfter = 5 * time.Second
)

// rig is a hub serving the dashboard, a projector and a simulated fleet
// on the real broker.
type rig struct {
	url    string
	tokens map[string]string
	store  *sqlstore.Store
	client *api.Client
	// stopGone stops the fleet of the one cluster, gone-000, that goes
	// away and must turn Stale.
	stopGone func()
}

func startSystem(t *testing.T) *rig {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	})
	prefix := kafkatest.Prefix(t)
	topics := events.DefaultTopics(prefix)
	if err := events.EnsureTopics(ctx, kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(4, 4), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(topics))...)
	conn := []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}
	s := &rig{tokens: map[string]string{}}
	var list []auth.Token
	for _, tk := range []struct{ name, role string }{{"admin", auth.RoleAdmin}, {"vera", auth.RoleViewer}} {
		tok, entry, err := auth.NewToken(tk.name, tk.role, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		s.tokens[tk.name], list = tok, append(list, entry)
	}
	if s.store, err = sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "views.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.store.Close() })
	sys, err := system.New(conn, signer, anchors, system.WithTopicPrefix(prefix), system.WithListen("127.0.0.1:0"),
		system.WithTokens(list...), system.WithStore(s.store, read.WithHeartbeatInterval(staleAfter)),
		system.WithDashboard(web.WithHeartbeatInterval(staleAfter)), system.WithFold(""))
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return sys.Run(gctx) })
	wctx, wcancel := context.WithTimeout(gctx, time.Minute)
	defer wcancel()
	if err := sys.WaitReady(wctx); err != nil {
		t.Fatalf("the system never ready: %v", err)
	}
	s.url = sys.URL()
	if s.client, err = api.NewClient(s.url, s.tokens["admin"], nil); err != nil {
		t.Fatal(err)
	}
	fleet := func(prefix string, n int) *sim.Fleet {
		f, err := sim.NewFleet(sim.FleetConfig{Clusters: n, Prefix: prefix, Hub: s.client, HubKey: signer.Public(),
			Conn: conn, Topics: topics, Heartbeat: heartbeat})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	sims, gone := fleet("sim", 3), fleet("gone", 1)
	g.Go(func() error { return sims.Run(gctx) })
	gctx2, stop := context.WithCancel(gctx)
	var goneErr error
	done := make(chan struct{})
	go func() {
		goneErr = gone.Run(gctx2)
		close(done)
	}()
	s.stopGone = func() {
		stop()
		<-done
		if goneErr != nil {
			t.Errorf("the gone fleet: %v", goneErr)
		}
	}
	t.Cleanup(func() {
		stop()
		<-done
	})
	return s
}

// apply applies guestbook to every cluster and waits until each applied it.
func (s *rig) apply(t *testing.T, clusters []string) {
	t.Helper()
	manifest := []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"guestbook","namespace":"argocd"},
	"spec":{"project":"default","source":{"repoURL":"https://git.example/apps.git","path":"guestbook","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"}}}`)
	waitFor(t, "every cluster to join", func() bool {
		sums, err := s.store.ClusterSummaries(t.Context())
		joined := 0
		for _, c := range sums {
			if !c.HeartbeatAt.IsZero() {
				joined++
			}
		}
		return err == nil && joined == len(clusters)
	})
	if _, err := s.client.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: clusters, Manifest: manifest}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every cluster to apply guestbook", func() bool {
		apps, err := s.store.Apps(t.Context(), projector.AppFilter{Namespace: "argocd", Name: "guestbook"})
		n := 0
		for _, a := range apps {
			if a.Desired != nil && a.Observed != nil && a.Observed.AppliedGeneration == a.Desired.Generation {
				n++
			}
		}
		return err == nil && n == len(clusters)
	})
}

// place applies a placement of manifest on the clusters selector matches.
func (s *rig) place(t *testing.T, selector string, manifest []byte) {
	t.Helper()
	if _, err := s.client.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: selector, Manifest: manifest}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// login logs b in with tok and waits for the fleet page.
func login(t *testing.T, ctx context.Context, url, tok string) {
	t.Helper()
	if err := chromedp.Run(ctx,
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", tok, chromedp.ByID),
		chromedp.Click("#login", chromedp.ByID),
		chromedp.WaitVisible("#fleet", chromedp.ByID),
	); err != nil {
		t.Fatalf("logging in: %v", err)
	}
}

// eval evaluates a JavaScript expression, awaiting it if it is a promise.
func eval(t *testing.T, ctx context.Context, js string, out any) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})); err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
}

// waitPage reloads path until check, evaluated there, is true.
func waitPage(t *testing.T, ctx context.Context, url, what, check string) {
	t.Helper()
	waitFor(t, what, func() bool {
		var ok bool
		if err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.Evaluate(check, &ok)); err != nil {
			t.Fatalf("loading %s: %v", url, err)
		}
		return ok
	})
}

const fleetNames = `[...document.querySelectorAll('#fleet tbody tr[data-cluster]')].map(r => r.dataset.cluster)`

// TestDashboardInBrowser drives the dashboard in Chromium against a real
// hub and projector over the real broker, with four simulated clusters of
// which one goes away.
func TestDashboardInBrowser(t *testing.T) {
	s := startSystem(t)
	clusters := []string{"gone-000", "sim-000", "sim-001", "sim-002"}
	s.apply(t, clusters)
	s.stopGone()
	// A placement on every cluster, which gone-000 will never deploy.
	s.place(t, "env", []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"podinfo","namespace":"argocd"},
	"spec":{"project":"default","source":{"repoURL":"https://git.example/apps.git","path":"podinfo","targetRevision":"v1"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":"podinfo"}}}`))
	// The spokes' status folds into health changes, which recovery time
	// reads: each running cluster's guestbook turns Healthy after its sync
	// (or, now and then in the simulation, Degraded).
	waitFor(t, "guestbook's health changes on the running clusters", func() bool {
		hs, err := s.store.HealthChanges(t.Context(), projector.DeploymentFilter{Namespace: "argocd", Name: "guestbook"})
		if err != nil {
			t.Fatal(err)
		}
		changed := map[string]bool{}
		for _, h := range hs {
			changed[h.Cluster] = true
		}
		return changed["sim-000"] && changed["sim-001"] && changed["sim-002"]
	})

	admin, adminPages := browsertest.New(t)
	login(t, admin, s.url, s.tokens["admin"])

	t.Run("fleet", func(t *testing.T) {
		var names []string
		eval(t, admin, fleetNames, &names)
		if !slices.Equal(names, clusters) {
			t.Errorf("fleet rows %v, want %v", names, clusters)
		}
		// The page stays open: its live stream turns gone-000 Stale
		// without a reload, which would drop the mark set on window.
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/"), chromedp.Evaluate(`window.argosyMark = 1`, nil)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "gone-000 to show as Stale on the open page", func() bool {
			var ok bool
			eval(t, admin, `(() => { const r = document.querySelector('#fleet tr[data-cluster="gone-000"]');
				return r.classList.contains('state-stale') && r.querySelector('.badge').textContent.startsWith('Stale ') })()`, &ok)
			return ok
		})
		var mark int
		eval(t, admin, `window.argosyMark || 0`, &mark)
		if mark != 1 {
			t.Error("the fleet page was reloaded to show gone-000 Stale")
		}
		var others []string
		eval(t, admin, `[...document.querySelectorAll('#fleet tr[data-cluster^="sim-"] .badge')].map(b => b.textContent)`, &others)
		if !slices.Equal(others, []string{"Connected", "Connected", "Connected"}) {
			t.Errorf("the running clusters show %v", others)
		}
		browsertest.Screenshot(t, admin, "fleet")
	})

	t.Run("filter", func(t *testing.T) {
		env := sim.Labels(0)["env"]
		var want []string
		for _, c := range clusters {
			var i int
			if _, err := fmt.Sscanf(c[strings.IndexByte(c, '-')+1:], "%d", &i); err != nil {
				t.Fatal(err)
			}
			if sim.Labels(i)["env"] == env {
				want = append(want, c)
			}
		}
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/"), chromedp.SetValue("#selector", "env="+env, chromedp.ByID),
			chromedp.Click("#filter", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the filtered fleet", func() bool {
			var names []string
			eval(t, admin, fleetNames, &names)
			return slices.Equal(names, want)
		})
		var loc string
		eval(t, admin, `location.search`, &loc)
		if !strings.Contains(loc, "selector=env%3D"+env) {
			t.Errorf("the filter is not in the URL: %q", loc)
		}
		// A running cluster's heartbeats may come late on a loaded
		// machine; the filter must settle on the one cluster that stopped.
		var names []string
		waitFor(t, "state=Stale to show gone-000 alone", func() bool {
			if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/?state=Stale")); err != nil {
				t.Fatal(err)
			}
			eval(t, admin, fleetNames, &names)
			return slices.Equal(names, []string{"gone-000"})
		})
	})

	t.Run("pagination", func(t *testing.T) {
		var page string
		var names []string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/?per=3"), chromedp.Text("#page", &page, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		eval(t, admin, fleetNames, &names)
		if page != "Page 1 of 2" || !slices.Equal(names, clusters[:3]) {
			t.Errorf("page 1: %q %v", page, names)
		}
		if err := chromedp.Run(admin, chromedp.Click("#next", chromedp.ByID), chromedp.WaitVisible("#prev", chromedp.ByID),
			chromedp.Text("#page", &page, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		eval(t, admin, fleetNames, &names)
		if page != "Page 2 of 2" || !slices.Equal(names, clusters[3:]) {
			t.Errorf("page 2: %q %v", page, names)
		}
	})

	t.Run("sync from the app page reaches the spoke", func(t *testing.T) {
		app := s.url + "/apps/argocd/guestbook"
		// The simulated Argo CD turns Applications Degraded now and then,
		// so how many converged varies; that one of the four is Stale
		// does not.
		waitPage(t, admin, app, "N of 4 converged and 1 Stale",
			`/^[0-3] of 4 clusters converged/.test(document.querySelector('#progress').textContent) && document.querySelector('#progress').textContent.includes('1 Stale')`)
		browsertest.Screenshot(t, admin, "application")
		var toast string
		if err := chromedp.Run(admin, chromedp.Click(`tr[data-cluster="sim-001"] button.op-sync`, chromedp.ByQuery),
			chromedp.WaitVisible("#toast.show", chromedp.ByQuery), chromedp.Text("#toast", &toast, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(toast, "sync requested: event ") {
			t.Fatalf("toast %q", toast)
		}
		eventID := strings.TrimPrefix(toast, "sync requested: event ")
		waitPage(t, admin, s.url+"/audit?cluster=sim-001", "the spoke's acknowledgement of "+eventID+" in the audit timeline",
			`[...document.querySelectorAll('#audit li')].some(li => li.textContent.includes('operation.requested') &&
				[...li.querySelectorAll('.badge.ok')].some(b => b.textContent.trim() === 'sim-001: applied'))`)
		var actor string
		eval(t, admin, `[...document.querySelectorAll('#audit li')].find(li => li.textContent.includes('operation.requested')).querySelector('b').textContent`, &actor)
		if actor != "admin" {
			t.Errorf("the operation's actor is %q, want admin", actor)
		}
		browsertest.Screenshot(t, admin, "audit")
	})

	t.Run("live resources from the app page", func(t *testing.T) {
		// The cluster's agent answers over the log: the simulated Argo
		// CD's Deployment, with its ReplicaSet and Pod under it.
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/apps/argocd/guestbook"), chromedp.WaitVisible("#tree-sim-001", chromedp.ByID),
			chromedp.Click("#tree-sim-001", chromedp.ByID), chromedp.WaitVisible(`#tree tr[data-kind="Pod"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		eval(t, admin, `[...document.querySelectorAll('#tree tbody tr')].map(tr => tr.dataset.kind)`, &kinds)
		if len(kinds) < 4 || kinds[0] != "Deployment" || kinds[1] != "ReplicaSet" || kinds[2] != "Pod" {
			t.Errorf("tree rows %v, want the Deployment, its ReplicaSet and Pod first", kinds)
		}
		browsertest.Screenshot(t, admin, "tree")
		// From the tree, the diff: the simulated resources as applied.
		var summary string
		if err := chromedp.Run(admin, chromedp.Click("#diff-link", chromedp.ByID), chromedp.WaitVisible(`#diff tr[data-kind="Deployment"]`, chromedp.ByQuery),
			chromedp.Text("#diff-summary", &summary, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		var rows []string
		eval(t, admin, `[...document.querySelectorAll('#diff tbody tr')].map(tr => tr.dataset.kind + ' ' + tr.dataset.modified)`, &rows)
		if !strings.Contains(summary, "No resource differs") || len(rows) < 2 || rows[0] != "Deployment false" || slices.Contains(rows, "Pod false") {
			t.Errorf("diff page: %q, rows %v; want the managed resources, none differing", summary, rows)
		}
		// The Stale cluster's agent is stopped: the page says so after
		// the question's timeout.
		var stale string
		eval(t, admin, `fetch('/apps/argocd/guestbook').then(r => r.text()).then(h => new DOMParser().parseFromString(h, 'text/html').querySelector('#app-rows tr.state-stale').dataset.cluster)`, &stale)
		var msg string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/apps/argocd/guestbook/tree?cluster="+stale),
			chromedp.WaitVisible("#tree-error", chromedp.ByID), chromedp.Text("#tree-error", &msg, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg, "did not answer within 10s") || !strings.Contains(msg, "its state is Stale") {
			t.Errorf("the Stale cluster's tree page says %q, want that it did not answer and that it is Stale", msg)
		}
	})

	t.Run("audit verify", func(t *testing.T) {
		var res string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/audit"), chromedp.Click("#verify", chromedp.ByID),
			chromedp.WaitVisible("#verify-ok", chromedp.ByID), chromedp.Text("#verify-ok", &res, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res, "Every chain holds") {
			t.Errorf("verify: %q", res)
		}
	})

	t.Run("rollout", func(t *testing.T) {
		// The placement made at the start: the three running clusters
		// deploy it, the stopped gone-000 keeps it pending.
		waitPage(t, admin, s.url+"/apps/argocd/podinfo", "three of the four clusters to deploy podinfo",
			`(() => { const r = document.querySelector('#rollout'); return r !== null && r.dataset.converged === '3' })()`)
		var progress struct{ Converged, Targeted, Waiting string }
		eval(t, admin, `(() => { const r = document.querySelector('#rollout');
			return {Converged: r.dataset.converged, Targeted: r.dataset.targeted, Waiting: r.querySelector('.note').textContent} })()`, &progress)
		if progress.Converged != "3" || progress.Targeted != "4" || !strings.Contains(progress.Waiting, "gone-000") {
			t.Errorf("the app page's rollout: %+v, want 3 of 4, waiting on gone-000", progress)
		}
		var row string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/reports"),
			chromedp.Text(`#rollouts tr[data-placement="argocd/podinfo"]`, &row, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(row, "3 of 4") || !strings.Contains(row, "In progress") {
			t.Errorf("the reports page's rollout row: %q", row)
		}
	})

	t.Run("placement edit", func(t *testing.T) {
		// Edit podinfo on the placements page: v1 to v2 is the placement's
		// second change, which the running clusters deploy in turn.
		var toast string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/placements"),
			chromedp.WaitVisible(`#placements tr[data-placement="argocd/podinfo"] button.p-edit`, chromedp.ByQuery),
			chromedp.Click(`#placements tr[data-placement="argocd/podinfo"] button.p-edit`, chromedp.ByQuery),
			chromedp.Evaluate(`(() => { const m = document.querySelector('#p-manifest'); m.value = m.value.replace('"v1"', '"v2"') })()`, nil),
			chromedp.Click("#p-save", chromedp.ByID),
			chromedp.WaitVisible("#toast.show", chromedp.ByQuery), chromedp.Text("#toast", &toast, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		if toast != "placement argocd/podinfo saved: generation 2" {
			t.Fatalf("toast %q", toast)
		}
		browsertest.Screenshot(t, admin, "placements")
		// Saving from a stale generation is a conflict, and writes nothing.
		if err := chromedp.Run(admin, chromedp.Evaluate(`document.querySelector('#p-generation').value = '1'`, nil),
			chromedp.Click("#p-save", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the conflict's toast", func() bool {
			eval(t, admin, `document.querySelector('#toast').textContent`, &toast)
			return strings.HasPrefix(toast, "saving refused (409)")
		})
		waitPage(t, admin, s.url+"/apps/argocd/podinfo", "three of the four clusters to deploy podinfo's second change",
			`(() => { const r = document.querySelector('#rollout');
				return r !== null && r.textContent.includes('Placement change 2') && r.dataset.converged === '3' })()`)
		waitPage(t, admin, s.url+"/placements", "the placements list at generation 2",
			`(() => { const r = document.querySelector('#placements tr[data-placement="argocd/podinfo"]');
				return r !== null && r.children[1].textContent === '2' })()`)
	})

	t.Run("reports", func(t *testing.T) {
		var rows int
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/reports?by=cluster"), chromedp.WaitVisible("#report", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		eval(t, admin, `document.querySelectorAll('#report tbody tr:not(:has(.empty))').length`, &rows)
		if rows == 0 {
			t.Fatal("the report has no row: the simulated deployments are missing")
		}
		// The simulated fleet's records cover minutes: a note says so where
		// a chart would be an empty grid.
		var note string
		eval(t, admin, `document.querySelector('#chart') === null ? document.querySelector('#chart-note').textContent : ''`, &note)
		if !strings.HasPrefix(note, "Too little data for a chart: ") {
			t.Errorf("the report has a chart of minutes of records, or no note: %q", note)
		}
		var csv string
		eval(t, admin, `fetch(document.querySelector('#csv').href).then(r => r.text())`, &csv)
		if !strings.HasPrefix(csv, "group,start,end,deployments,") {
			t.Errorf("the CSV download starts %q", csv[:min(len(csv), 60)])
		}
		var js map[string]any
		eval(t, admin, `fetch(document.querySelector('#json').href).then(r => r.json())`, &js)
		if js["by"] != "cluster" {
			t.Errorf("the JSON download: %v", js)
		}
		browsertest.Screenshot(t, admin, "reports")
	})

	t.Run("cluster page", func(t *testing.T) {
		var state string
		if err := chromedp.Run(admin, chromedp.Navigate(s.url+"/clusters/gone-000"), chromedp.Text("#cluster-state", &state, chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(state, "Stale ") {
			t.Errorf("gone-000 shows %q", state)
		}
	})

	t.Run("accessibility", func(t *testing.T) {
		anon, anonPages := browsertest.New(t)
		checkAccessibility(t, admin, anon, s.url)
		if errs := anonPages.Errors(); len(errs) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
		}
	})

	t.Run("keyboard", func(t *testing.T) { checkKeyboard(t, admin, s.url) })

	if errs := adminPages.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}

	t.Run("viewer", func(t *testing.T) {
		viewer, viewerPages := browsertest.New(t)
		login(t, viewer, s.url, s.tokens["vera"])
		var buttons int
		if err := chromedp.Run(viewer, chromedp.Navigate(s.url+"/apps/argocd/guestbook"), chromedp.WaitVisible("#app-clusters", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		eval(t, viewer, `document.querySelectorAll('button[data-op]').length`, &buttons)
		if buttons != 0 {
			t.Errorf("a viewer sees %d write buttons", buttons)
		}
		if err := chromedp.Run(viewer, chromedp.Navigate(s.url+"/placements"),
			chromedp.WaitVisible(`#placements tr[data-placement="argocd/podinfo"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		eval(t, viewer, `document.querySelectorAll('#placement-form, button.p-edit').length`, &buttons)
		if buttons != 0 {
			t.Errorf("a viewer sees the placement form or %d edit buttons", buttons)
		}
		forge := `fetch('/api/v1/clusters/sim-001/applications/argocd/guestbook/operations', {method: 'POST',
			headers: {'Content-Type': 'application/json'%s}, body: JSON.stringify({operation: 'sync'})}).then(r => r.status)`
		var status int
		eval(t, viewer, fmt.Sprintf(forge, `, 'X-Argosy-CSRF': document.body.dataset.csrf`), &status)
		if status != 403 {
			t.Errorf("a viewer's forged sync answered %d, want 403", status)
		}
		eval(t, viewer, fmt.Sprintf(forge, ""), &status)
		if status != 401 {
			t.Errorf("a sync with the session cookie and no CSRF header answered %d, want 401", status)
		}
		if errs := viewerPages.Errors(); len(errs) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
		}
	})
}
