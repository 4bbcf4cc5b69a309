package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// TestAppAdopt checks what app adopt sends: the Application as its cluster
// published it, or -f's, marked adopt, for one cluster; and the errors
// when there is nothing to adopt.
func TestAppAdopt(t *testing.T) {
	cmdtest.Isolate(t)
	q := readtest.Fleet()
	key := projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "edge-web"}
	q.AppRows = append(q.AppRows, projector.AppRow{AppKey: key, Observed: &projector.AppObserved{AppKey: key,
		Local: &projector.LocalApp{Project: "default", Labels: map[string]string{"team": "edge"}, Generation: 7, EventID: "ev-local",
			Spec: json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example.com/web.git","path":"web"},` +
				`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`)}}})
	h := fleetHub(t, read.New(q, read.WithClock(readtest.Now)))

	stdout, _, err := run(t, h, h.Admin, "", "adopt", "edge-web", "--cluster", "prod-eu")
	if err != nil || !strings.Contains(stdout, "application.upserted  prod-eu  applications  argocd     edge-web") {
		t.Fatalf("adopt: %v\n%s", err, stdout)
	}
	reqs := h.Requests()
	var req api.ApplyRequest
	if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Body), &req); err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"labels":{"team":"edge"},"name":"edge-web","namespace":"argocd"},` +
		`"spec":{"project":"default","source":{"repoURL":"https://git.example.com/web.git","path":"web"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`
	if !req.Adopt || len(req.Clusters) != 1 || req.Clusters[0] != "prod-eu" || string(req.Manifest) != want {
		t.Errorf("request %s\nwant adopt on prod-eu of\n%s", reqs[len(reqs)-1].Body, want)
	}

	manifest := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: edge-api, namespace: argocd}\n" +
		"spec: {project: default, source: {repoURL: \"https://git.example.com/api.git\", path: api},\n" +
		"  destination: {server: \"https://kubernetes.default.svc\", namespace: api}}\n"
	if _, _, err := run(t, h, h.Admin, manifest, "adopt", "edge-api", "--cluster", "prod-eu", "-f", "-", "--dry-run"); err != nil {
		t.Fatalf("adopt -f: %v", err)
	}
	reqs = h.Requests()
	if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Body), &req); err != nil {
		t.Fatal(err)
	}
	if !req.Adopt || !strings.Contains(string(req.Manifest), `"name":"edge-api"`) || reqs[len(reqs)-1].Query != "dryRun=true" {
		t.Errorf("adopt -f sent %s?%s", reqs[len(reqs)-1].Body, reqs[len(reqs)-1].Query)
	}

	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"adopt", "guestbook", "--cluster", "prod-eu"}, "", "cluster prod-eu has published no Application argocd/guestbook of its own"},
		{[]string{"adopt", "edge-web"}, "", "--cluster is required"},
		{[]string{"adopt", "other", "--cluster", "prod-eu", "-f", "-"}, manifest, "want one Application named argocd/other"},
	} {
		if _, _, err := run(t, h, h.Admin, tc.stdin, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestAppAdoptRefusesAnOmittedSpec: a published spec the read API left
// out, too deep to answer with, is not adopted as its marker.
func TestAppAdoptRefusesAnOmittedSpec(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, read.New(readtest.Hostile(), read.WithClock(readtest.Now)))
	before := len(h.Requests())
	_, _, err := run(t, h, h.Admin, "", "adopt", "billing", "--cluster", "prod-eu")
	want := "the spec cluster prod-eu published of argocd/billing is too deep to show: 9998 levels"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("adopt: error %v, want %q", err, want)
	}
	for _, r := range h.Requests()[before:] {
		if r.Method != "GET" {
			t.Errorf("adopt sent %s %s", r.Method, r.Path)
		}
	}
}
