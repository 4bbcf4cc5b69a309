package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// TestVendoredAssets holds the served third-party files to the checksums
// that go generate wrote when it took them out of their npm packages.
func TestVendoredAssets(t *testing.T) {
	f, err := os.Open(filepath.Join("static", "vendor", "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := httptest.NewServer(web.Static())
	defer srv.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		resp, err := http.Get(srv.URL + "/vendor/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", name, resp.StatusCode, err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: the served file is not the one vendor.json pins; run go generate ./hub/web", name)
		}
		n++
	}
	if n < 4 {
		t.Errorf("SHA256SUMS lists %d files", n)
	}
}

func serve(t *testing.T, v web.Viewer) *httptest.Server {
	t.Helper()
	h, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now), web.WithHeartbeatInterval(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), v)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := hubtest.Do(t, http.DefaultClient, req)
	return resp.StatusCode, body
}

// TestPages renders each page over the sample fleet.
func TestPages(t *testing.T) {
	srv := serve(t, web.Viewer{Actor: "alice", Role: "deployer", CanWrite: true, CSRF: "c0ffee"})
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/", 200, []string{`data-cluster="prod-eu"`, "Stale 5m0s", `data-csrf="c0ffee"`, "Page 1 of 1", "3 clusters"}},
		{"/?state=Stale", 200, []string{`data-cluster="prod-us"`, "1 clusters"}},
		{"/?selector=env%3Dprod&per=1&page=2", 200, []string{`data-cluster="prod-us"`, "Page 2 of 2", `id="prev"`}},
		{"/?selector=env%3D%3D%3D", 400, []string{"selector"}},
		{"/?state=Green", 400, []string{`state &#34;Green&#34;`}},
		{"/?page=0", 400, []string{"page"}},
		{"/clusters/prod-us", 200, []string{"Stale 5m0s", "argocd/guestbook"}},
		{"/clusters/nope", 404, []string{"no cluster"}},
		{"/apps/argocd/guestbook", 200, []string{"1 of 2", "1 Stale", `class="op-sync"`, `class="op-refresh"`,
			// The placement's newest change waits on both clusters.
			"Placement change 2", "<b>0 of 2</b> targeted clusters deployed it", "2 pending", `Waiting on: <a href="/clusters/prod-eu" id="waiting-prod-eu">`}},
		{"/apps/argocd/billing", 200, []string{"rejected 5: invalid"}},
		{"/apps/argocd/guestbook?state=Stale", 200, []string{`data-cluster="prod-us"`, "1 clusters Stale; page 1 of 1", `href="?state=Converged">Converged 1</a>`,
			`href="?">all 2 clusters</a>`, `id="r-prod-us" data-live`}},
		{"/apps/argocd/guestbook?state=Failed", 200, []string{"No cluster is Failed."}},
		{"/apps/argocd/guestbook?state=Green", 400, []string{`state &#34;Green&#34;`}},
		{"/apps", 200, []string{`data-app="argocd/guestbook"`, `data-app="argocd/billing"`, "2 across the fleet",
			`href="/apps/argocd/guestbook?state=Stale">Stale 1</a>`, `href="/apps/argocd/billing?state=Failed">Failed 1</a>`, `href="/apps" aria-current="page"`}},
		{"/apps?state=Failed", 200, []string{`data-app="argocd/billing"`, "1 across the fleet"}},
		{"/apps?grid=env", 200, []string{`id="app-grid"`, "<th>prod</th>", "4f2a9c1"}},
		{"/apps?state=Green", 400, []string{`state &#34;Green&#34;`}},
		{"/apps/argocd/nope", 404, []string{"no Application"}},
		{"/placements", 200, []string{`id="placements"`, `id="placement-form"`, `href="/placements" aria-current="page"`}},
		{"/audit", 200, []string{`id="audit"`}},
		{"/audit?since=forever", 400, []string{"since"}},
		{"/reports?by=app&days=30", 200, []string{`id="apps"`, "argocd/billing", `id="rollouts"`,
			`data-placement="argocd/guestbook" data-generation="2"`, "<td>0 of 2</td>",
			`data-placement="argocd/guestbook" data-generation="1"`, "<td>2 of 2</td>", "Done <small>(superseded)</small>"}},
		{"/reports?by=app&days=1", 200, []string{`data-generation="2"`, "<td>0 of 2</td>"}},
		{"/reports?by=label", 400, []string{"label"}},
		{"/reports?days=367", 400, []string{`days &#34;367&#34;: want 1 to 366`}},
		{"/nowhere", 404, []string{"no such page"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := get(t, srv.URL+tt.path)
			if status != tt.status {
				t.Errorf("status %d, want %d\n%s", status, tt.status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
		})
	}
}

// TestStoreFailure checks that a failing store is a 500 page that names
// no detail, not a crash or half a page.
func TestStoreFailure(t *testing.T) {
	q := readtest.Fleet()
	q.Err = errors.New("disk on fire")
	h, err := web.New(q)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "alice", Role: "viewer"})))
	}))
	defer srv.Close()
	for _, path := range []string{"/", "/clusters/prod-eu", "/apps", "/apps/argocd/guestbook", "/audit", "/reports"} {
		status, body := get(t, srv.URL+path)
		if status != http.StatusInternalServerError || !strings.Contains(body, "internal error") || strings.Contains(body, "disk on fire") {
			t.Errorf("%s: %d\n%s", path, status, body)
		}
	}
}

// TestAuditPageShowsRefusedReplay: an entry the projector refused as a
// replay is marked so, with its reason, and shows no change.
func TestAuditPageShowsRefusedReplay(t *testing.T) {
	q := readtest.Fleet()
	replay := q.AuditRows[1] // ev-guestbook, a change with a diff and a result
	replay.Offset, replay.At = 13, readtest.Now().Add(-time.Minute)
	replay.Before, replay.After, replay.Results = nil, nil, nil
	replay.Refused = "generation 3 is not newer than the object's generation 3 (event ev-guestbook)"
	q.AuditRows = []projector.AuditRow{replay}
	h, err := web.New(q, web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "alice", Role: "viewer"})))
	}))
	defer srv.Close()
	status, body := get(t, srv.URL+"/audit")
	if status != 200 || !strings.Contains(body, `title="generation 3 is not newer than the object&#39;s generation 3 (event ev-guestbook)">refused: replay`) ||
		strings.Contains(body, "Spec change") || strings.Contains(body, "applied") {
		t.Errorf("%d: the replay is not shown refused, without change or result:\n%s", status, body)
	}
}

// TestViewerSeesNoWriteButtons checks the page a viewer gets.
func TestViewerSeesNoWriteButtons(t *testing.T) {
	srv := serve(t, web.Viewer{Actor: "vera", Role: "viewer"})
	_, body := get(t, srv.URL+"/apps/argocd/guestbook")
	if strings.Contains(body, "data-op=") {
		t.Error("a viewer's page has write buttons")
	}
	_, body = get(t, srv.URL+"/placements")
	if !strings.Contains(body, `id="placements"`) || strings.Contains(body, "placement-form") {
		t.Error("a viewer's placements page has no list, or has the form")
	}
}

// TestReportsPage: by app, the reports page leads with one row per
// Application over the fleet, whose link lists its clusters a page at a
// time; rates under a day are a count and its span, as `argosy report`
// writes them; and records too few for a chart are a note, not an empty
// grid.
func TestReportsPage(t *testing.T) {
	srv := serve(t, web.Viewer{Actor: "alice", Role: "viewer"})
	tests := []struct {
		path      string
		status    int
		want, not []string
	}{
		{"/reports?by=app&days=30", 200, []string{
			`<td><a href="/reports?app=argocd%2Fbilling&amp;by=app&amp;days=30">argocd/billing</a></td><td>1</td>`,
			`<td><a href="/reports?app=argocd%2Fguestbook&amp;by=app&amp;days=30">argocd/guestbook</a></td><td>2</td>
<td>3</td><td>0.38</td>`,
			"4 deployments over 8d (2026-02-22 12:00 to 2026-03-02 12:00 UTC): 0.50 per day.", `id="chart"`},
			[]string{`id="report"`, "prod-eu/argocd", "chart-note"}},
		{"/reports?by=app&app=argocd/guestbook&days=30", 200, []string{`id="app-clusters"`,
			`<td><a href="/clusters/prod-eu">prod-eu</a></td>
<td>2</td><td>0.25</td>`, `href="/clusters/prod-us"`, "Page 1 of 1", `id="all-apps" href="/reports?by=app&amp;days=30"`,
			`name="app" value="argocd/guestbook"`, "3 deployments over 8d"},
			[]string{"argocd/billing"}},
		{"/reports?by=app&app=argocd/guestbook&days=30&per=1&page=2", 200, []string{`href="/clusters/prod-us"`, "Page 2 of 2", `id="prev"`},
			[]string{`href="/clusters/prod-eu"`}},
		{"/reports?by=cluster&days=1", 200, []string{`id="report"`,
			`<p class="note" id="chart-note">Too little data for a chart: 2 deployments since 2026-03-01 12:00 UTC (1d).</p>`,
			"<td>prod-us</td><td>2026-03-02</td><td>1</td><td>1 in 12h</td>"},
			[]string{`id="chart"`}},
		{"/reports?by=cluster&days=1&per=1&page=2", 200, []string{"<td>prod-us</td><td>2026-03-02</td>", "Page 2 of 2", `id="prev"`},
			[]string{"<td>prod-eu</td>"}},
		{"/reports?by=app&days=1&app=argocd/billing", 200, []string{
			`<p class="note" id="chart-note">Too little data for a chart: 1 deployment since 2026-03-01 12:00 UTC (1d).</p>`},
			[]string{`id="chart"`}},
		{"/reports?by=app&days=1&app=argocd/nothing", 200, []string{
			`<p class="note" id="chart-note">No deployment from 2026-03-01 12:00 to 2026-03-02 12:00 UTC.</p>`, "No deployment in this range."},
			[]string{`id="chart"`}},
		{"/reports?by=cluster&app=argocd/guestbook", 400, []string{"grouped by app"}, nil},
		{"/reports?by=app&app=guestbook", 400, []string{"want namespace/name"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := get(t, srv.URL+tt.path)
			if status != tt.status {
				t.Errorf("status %d, want %d\n%s", status, tt.status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(body, w) {
					t.Errorf("the page has %q", w)
				}
			}
			if t.Failed() {
				t.Log(body)
			}
		})
	}
}

func TestReportDownloads(t *testing.T) {
	srv := serve(t, web.Viewer{Actor: "alice", Role: "viewer"})
	status, csv := get(t, srv.URL+"/reports/deployments.csv?by=cluster")
	if status != 200 || !strings.HasPrefix(csv, "group,start,end,deployments,") || !strings.Contains(csv, "\nprod-eu,") {
		t.Errorf("CSV: %d\n%s", status, csv)
	}
	status, js := get(t, srv.URL+"/reports/deployments.json?by=cluster")
	if status != 200 || !strings.Contains(js, `"by":"cluster"`) {
		t.Errorf("JSON: %d\n%s", status, js)
	}
}

// TestAuditPageFoldsActions: a placement edit on 50 clusters is one entry
// of the timeline, alice's, with its clusters' results counted, its spec
// change once and its entries behind a details element; reads are hidden
// until asked for; ?group=none lists every entry, each cluster's naming
// alice via the placer; the page is paged.
func TestAuditPageFoldsActions(t *testing.T) {
	h, err := web.New(readtest.PlacementEdit(50), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "vera", Role: "viewer"})))
	}))
	defer srv.Close()
	tests := []struct {
		path             string
		items            int
		want, wantNot    []string
		diffs, showsMore int
	}{
		{"/audit", 2, []string{"<b>alice</b>", "placements.apply", "placement argocd/guestbook (generation 4)", "50 clusters",
			">47 applied<", ">2 failed<", ">1 pending<", "<summary>52 entries</summary>", "<b>mallory</b>", ">denied<",
			`<li class="more">and 32 more: <a href="?app=guestbook&amp;group=none&amp;namespace=argocd">every entry</a></li>`},
			[]string{"<b>bob</b>", "hub/placement</span>"}, 1, 0},
		{"/audit?reads=1", 4, []string{"<b>bob</b>", "<b>alice</b>"}, nil, 1, 0},
		{"/audit?reads=1&limit=2", 2, []string{"<b>bob</b>", "Show more"}, []string{"<b>alice</b>"}, 0, 1},
		{"/audit?group=none&app=guestbook&limit=100", 50, []string{`<b>alice</b> <span class="via">via hub/placement</span>`},
			[]string{"<b>mallory</b>"}, 50, 0},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			status, body := get(t, srv.URL+tc.path)
			_, ol, ok := strings.Cut(body, `<ol class="timeline"`)
			if !ok {
				t.Fatalf("%d: no timeline:\n%.2000s", status, body)
			}
			items := strings.Count(ol, `<li class="action">`)
			if strings.Contains(tc.path, "group=none") {
				items = strings.Count(ol, "<li>\n")
			}
			if status != 200 || items != tc.items || strings.Count(body, `<pre class="diff">`) != tc.diffs ||
				strings.Count(body, "Show more") != tc.showsMore {
				t.Errorf("%d: %d entries, %d diffs, %d Show more; want %d, %d, %d:\n%.3000s", status, items,
					strings.Count(body, `<pre class="diff">`), strings.Count(body, "Show more"), tc.items, tc.diffs, tc.showsMore, ol)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}

// TestRollbackButtons: each successful deployment with a history id has a
// Roll back to this button, history id 0 (Argo CD's first entry)
// included; a failed one and one without an id have none.
func TestRollbackButtons(t *testing.T) {
	q := readtest.Fleet()
	q.DeploymentRows = q.DeploymentRows[:3] // prod-eu: guestbook twice, billing failed
	for i, id := range []*int64{ptr(int64(0)), ptr(int64(1)), ptr(int64(2))} {
		q.DeploymentRows[i].HistoryID = id
	}
	q.DeploymentRows = append(q.DeploymentRows, q.DeploymentRows[0])
	q.DeploymentRows[3].HistoryID, q.DeploymentRows[3].DeploymentID, q.DeploymentRows[3].FinishedAt = nil, "no-id", readtest.Now().Add(-time.Hour)
	h, err := web.New(q, web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "alice", Role: "deployer", CanWrite: true, CSRF: "c"})))
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string][]string{"/apps/argocd/guestbook": {"0", "1"}, "/apps/argocd/billing": nil} {
		status, body := get(t, srv.URL+path)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", path, status)
		}
		var got []string
		for _, part := range strings.Split(body, `class="op-rollback"`)[1:] {
			id, _, _ := strings.Cut(strings.SplitN(part, `data-history="`, 2)[1], `"`)
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: rollback buttons to history ids %v, want %v", path, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestAppPageShowsWhatItDeploys: the Application page says what the
// Application deploys, as the cluster that reported last counts it.
func TestAppPageShowsWhatItDeploys(t *testing.T) {
	q := readtest.Fleet()
	q.AppRows[0].Observed.Resources = &schemas.ResourceSummary{Total: 4, ByKind: map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": 2}}
	h, err := web.New(q, web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "vera", Role: "viewer"})))
	}))
	defer srv.Close()
	_, body := get(t, srv.URL+"/apps/argocd/guestbook")
	if want := "Deploys 4 resources: 2 ConfigMap, 1 Deployment, 1 Service"; !strings.Contains(body, want) || !strings.Contains(body, "as prod-eu reported them last") {
		t.Errorf("the page does not say %q of prod-eu", want)
	}
}
