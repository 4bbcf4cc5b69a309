package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// changing is readtest.Fleet whose Applications and clock may change
// while it is served.
type changing struct {
	*readtest.Query
	mu  sync.Mutex
	now time.Time
}

func (q *changing) Apps(ctx context.Context, f projector.AppFilter) ([]projector.AppRow, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.Query.Apps(ctx, f)
}

func (q *changing) set(f func(rows []projector.AppRow)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f(q.AppRows)
}

func (q *changing) clock() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.now
}

func (q *changing) tick(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.now = q.now.Add(d)
}

// patch is one event of a live stream.
type patch struct {
	Event, ID, HTML string
}

// stream reads a live stream's events into a channel until it ends; k
// is the versions the page shows.
func stream(t *testing.T, srvURL, path, k string) <-chan patch {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srvURL+"/live?path="+url.QueryEscape(path)+"&k="+url.QueryEscape(k), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan patch, 100)
	go func() { // ends with the response, which the test's context ends
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev patch
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && ev.Event == "patch":
				var d struct{ ID, HTML string }
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d) == nil {
					ev.ID, ev.HTML = d.ID, d.HTML
				}
			case strings.HasPrefix(line, "data: "):
				ev.HTML = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.Event != "":
				out <- ev
				ev = patch{}
			}
		}
	}()
	return out
}

// ids reads the events of one render: those that come within a short
// while of each other.
func ids(t *testing.T, events <-chan patch, wait time.Duration) []string {
	t.Helper()
	var out []string
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return out
			}
			out = append(out, ev.Event+" "+ev.ID)
			timer.Reset(200 * time.Millisecond)
		case <-timer.C:
			return out
		}
	}
}

// TestLiveSendsWhatChanged follows the Application page over a live
// stream: every region once, then nothing while only the clock moves,
// then only the rows and counts a change touches.
func TestLiveSendsWhatChanged(t *testing.T) {
	q := &changing{Query: readtest.Fleet(), now: readtest.Now()}
	h, err := web.New(q, web.WithClock(q.clock), web.WithLiveInterval(50*time.Millisecond), web.WithSummaryTTL(0))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "alice", Role: "deployer", CanWrite: true})))
	}))
	t.Cleanup(srv.Close) // after the test's context, which ends the stream, is cancelled

	// Opened with the versions the page shows, the stream sends nothing
	// until something changes.
	_, page := get(t, srv.URL+"/apps/argocd/guestbook")
	if quiet := ids(t, stream(t, srv.URL, "/apps/argocd/guestbook", versions(page)), time.Second); len(quiet) != 0 {
		t.Errorf("opened with the page's versions, sent %q", quiet)
	}
	events := stream(t, srv.URL, "/apps/argocd/guestbook", "")
	first := ids(t, events, 5*time.Second)
	want := []string{"patch resources", "patch progress", "patch progress-bar", "patch app-counts", "patch rollout-live", "patch app-rows",
		"patch app-pager", "patch deployments-rows"}
	if !slices.Equal(first, want) {
		t.Fatalf("first render sent %q, want %q", first, want)
	}
	// prod-us's Stale age changes with the clock, which its row does not
	// count as a change.
	q.tick(7 * time.Second)
	if quiet := ids(t, events, time.Second); len(quiet) != 0 {
		t.Errorf("with nothing changed, sent %q", quiet)
	}
	q.set(func(rows []projector.AppRow) { // guestbook on prod-eu; a new row, as a store's read is
		o := *rows[0].Observed
		o.Health = &schemas.HealthStatus{Status: "Degraded"}
		rows[0].Observed = &o
	})
	got := ids(t, events, 5*time.Second)
	want = []string{"patch progress", "patch progress-bar", "patch app-counts", "patch r-prod-eu"}
	if !slices.Equal(got, want) {
		t.Errorf("after prod-eu turned Degraded, sent %q, want %q", got, want)
	}
}

// TestLiveRefuses: a stream follows pages of the dashboard only, and ends
// with the page's status when it has none to show.
func TestLiveRefuses(t *testing.T) {
	srv := serve(t, web.Viewer{Actor: "alice", Role: "viewer"})
	for _, p := range []string{"https://elsewhere.example/", "//elsewhere.example/", "/live?path=/", "/static/app.js", "nope"} {
		status, body := get(t, srv.URL+"/live?path="+url.QueryEscape(p))
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
	events := stream(t, srv.URL, "/apps/argocd/nope", "")
	if ev := <-events; ev.Event != "gone" || ev.HTML != "404" {
		t.Errorf("a page that is not there: %+v", ev)
	}
}

// versions are the live regions' versions a page shows, as app.js sends
// them.
func versions(page string) string {
	var out []string
	for _, m := range regexp.MustCompile(`id="([^"]+)"[^>]*data-live[^>]*data-k="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1]+":"+m[2])
	}
	return strings.Join(out, ",")
}

// TestLiveEndsWhenTheServerStops: an open stream ends as the server
// begins to shut down, so that the shutdown does not wait it out.
func TestLiveEndsWhenTheServerStops(t *testing.T) {
	h, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- httpserve.Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(web.WithViewer(r.Context(), web.Viewer{Actor: "vera", Role: "viewer"})))
		}))
	}()
	events := stream(t, "http://"+ln.Addr().String(), "/apps/argocd/guestbook", "")
	if ev := <-events; ev.Event != "patch" {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("the server, stopped with a stream open: %v", err)
	}
	for range events { // the stream ends with the response
	}
}
