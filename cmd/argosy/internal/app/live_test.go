package app

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// TestLiveCommands runs argosy app tree, diff, manifests and logs against a
// server that answers as the hub does, and checks what each asks for and
// prints: the tree as a table with each node's parent, a manifest as
// YAML, log lines with a note when the agent cut older ones, a diff as
// diff -u of the modified resources with exit code 1, and
// --timeout in whole seconds, rounded up.
func TestLiveCommands(t *testing.T) {
	cmdtest.Isolate(t)
	var mu sync.Mutex
	var asked []string
	answers := map[string]string{
		"tree": `{"nodes":[{"group":"apps","version":"v1","kind":"Deployment","namespace":"web","name":"guestbook","uid":"d","health":{"status":"Healthy"}},
			{"group":"apps","version":"v1","kind":"ReplicaSet","namespace":"web","name":"guestbook-5d8f7","uid":"r","parentRefs":[{"group":"apps","kind":"Deployment","namespace":"web","name":"guestbook","uid":"d"}]}]}`,
		"manifest": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"demo","namespace":"web"},"data":{"password":"++++++++"}}`,
		"logs":     `{"lines":["listening on :8080","ready"]}`,
		"diff": `{"items":[{"kind":"ConfigMap","namespace":"web","name":"settings","modified":true,"syncStatus":"Synced",
			"targetState":"{\"apiVersion\":\"v1\",\"data\":{\"k\":\"old\",\"same\":\"x\"},\"kind\":\"ConfigMap\"}",
			"normalizedLiveState":"{\"apiVersion\":\"v1\",\"data\":{\"k\":\"new\",\"same\":\"x\"},\"kind\":\"ConfigMap\"}"},
			{"group":"apps","kind":"Deployment","namespace":"web","name":"guestbook","normalizedLiveState":"{\"kind\":\"Deployment\"}"},
			{"kind":"Service","namespace":"web","name":"guestbook","normalizedLiveState":"{}","targetState":"{}"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		what := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		_ = json.NewEncoder(w).Encode(api.LiveAnswer{Cluster: "prod-eu", Namespace: "argocd", Name: "guestbook", Query: what,
			RequestID: "q", Truncated: what == "logs", Answer: json.RawMessage(answers[what])})
	}))
	t.Cleanup(srv.Close)
	flags := []string{"--cluster", "prod-eu", "--server", srv.URL, "--token", "t"}

	out, _, err := cmdtest.Run(t, NewCmdApp, append([]string{"app", "tree", "guestbook", "--timeout", "1500ms"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ReplicaSet.apps") || !strings.Contains(out, "Deployment/guestbook") || !strings.Contains(out, "Healthy") {
		t.Errorf("tree:\n%s", out)
	}
	out, _, err = cmdtest.Run(t, NewCmdApp, append([]string{"app", "manifests", "guestbook", "--kind", "Secret", "--resource-name", "demo",
		"--resource-namespace", "web"}, flags...)...)
	if err != nil || !strings.Contains(out, "password: ++++++++") {
		t.Errorf("manifests: %v\n%s", err, out)
	}
	out, errOut, err := cmdtest.Run(t, NewCmdApp, append([]string{"app", "logs", "guestbook", "--pod", "guestbook-5d8f7-x2v9q",
		"--pod-namespace", "web", "--tail", "50", "--since", "10m", "--timestamps"}, flags...)...)
	if err != nil || out != "listening on :8080\nready\n" || !strings.Contains(errOut, "older lines were cut") {
		t.Errorf("logs: %v\n%s\n%s", err, out, errOut)
	}
	if _, _, err := cmdtest.Run(t, NewCmdApp, append([]string{"app", "logs", "guestbook", "--since", "-1m", "--pod", "p"}, flags...)...); err == nil ||
		strings.Contains(err.Error(), "%!") {
		t.Errorf("--since -1m: %v, want a usage error that reads well", err)
	}
	out, errOut, err = cmdtest.Run(t, NewCmdApp, append([]string{"app", "diff", "guestbook"}, flags...)...)
	var exit *cmdkit.ExitError
	if !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(err.Error(), "1 of 3 resources") {
		t.Errorf("diff with a modified resource: %v, want exit 1 naming 1 of 3", err)
	}
	if want := "===== ConfigMap web/settings ======\n--- last applied\n+++ live\n@@ -1,5 +1,5 @@\n apiVersion: v1\n data:\n-  k: old\n+  k: new\n   same: x\n kind: ConfigMap\n"; out != want ||
		!strings.Contains(errOut, "1 resources carry no last-applied configuration") {
		t.Errorf("diff:\n%s\nwant:\n%s\nstderr: %s", out, want, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"/api/v1/clusters/prod-eu/applications/argocd/guestbook/tree?timeout=2",
		"/api/v1/clusters/prod-eu/applications/argocd/guestbook/manifest?kind=Secret&resourceName=demo&resourceNamespace=web&timeout=10&version=v1",
		"/api/v1/clusters/prod-eu/applications/argocd/guestbook/logs?resourceName=guestbook-5d8f7-x2v9q&resourceNamespace=web&sinceSeconds=600&tailLines=50&timeout=10&timestamps=true",
		"/api/v1/clusters/prod-eu/applications/argocd/guestbook/diff?timeout=10",
	}
	if strings.Join(asked, "\n") != strings.Join(want, "\n") {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
}
