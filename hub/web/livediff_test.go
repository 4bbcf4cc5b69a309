package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// TestLiveDiffPage renders the diff page over a cluster's answer: a
// modified ConfigMap as the lines removed and added, escaped; a
// Deployment applied server-side as such; a missing Service; the
// summary counting them. A cluster that does not answer is an error on
// the page, and no cluster a 400.
func TestLiveDiffPage(t *testing.T) {
	answer := schemas.ApplicationDiff{Items: []schemas.ResourceDiff{
		{Kind: "ConfigMap", Namespace: "web", Name: "settings", SyncStatus: "Synced", Modified: true,
			TargetState:         `{"apiVersion":"v1","data":{"k":"<old>"},"kind":"ConfigMap"}`,
			NormalizedLiveState: `{"apiVersion":"v1","data":{"k":"<new>"},"kind":"ConfigMap"}`},
		{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "guestbook", SyncStatus: "Synced", NormalizedLiveState: `{"kind":"Deployment"}`},
		{Kind: "Service", Namespace: "web", Name: "guestbook", SyncStatus: "OutOfSync", Modified: true, NormalizedLiveState: "null"},
	}}
	var asked []string
	inspect := func(_ context.Context, query, cluster, namespace, name string) (json.RawMessage, error) {
		asked = append(asked, query+" "+cluster+" "+namespace+"/"+name)
		if cluster == "silent" {
			return nil, errors.New("cluster silent did not answer within 10s: its state is Stale")
		}
		return json.Marshal(answer)
	}
	h, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := web.WithInspect(web.WithViewer(r.Context(), web.Viewer{Actor: "alice", Role: "viewer"}), inspect)
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)

	status, body := get(t, srv.URL+"/apps/argocd/guestbook/diff?cluster=prod-eu")
	for _, want := range []string{
		`<span class="ddel">-   k: &lt;old&gt;</span>`, `<span class="dadd">+   k: &lt;new&gt;</span>`,
		"2 of 3 resources differ from what Argo CD last applied.", "1 carry no last-applied configuration",
		"Missing from the cluster", "No last-applied configuration",
	} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("diff page (%d) lacks %q:\n%s", status, want, body)
		}
	}
	if strings.Contains(body, "<old>") {
		t.Error("the diff page writes a value unescaped")
	}
	if status, body := get(t, srv.URL+"/apps/argocd/guestbook/diff?cluster=silent"); status != http.StatusOK ||
		!strings.Contains(body, `id="diff-error"`) || !strings.Contains(body, "its state is Stale") {
		t.Errorf("diff page of a silent cluster (%d):\n%s", status, body)
	}
	if status, _ := get(t, srv.URL+"/apps/argocd/guestbook/diff"); status != http.StatusBadRequest {
		t.Errorf("diff page with no cluster: %d, want 400", status)
	}
	if want := "diff prod-eu argocd/guestbook,diff silent argocd/guestbook"; strings.Join(asked, ",") != want {
		t.Errorf("asked %q, want %q", strings.Join(asked, ","), want)
	}
}
