package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

var ignore = cmp.Options{cmpopts.IgnoreUnexported(apicmd.Options{}, apicmd.WriteFlags{}, apicmd.ApplyOptions{}),
	cmpopts.IgnoreFields(AppApplyOptions{}, "IO"), cmpopts.IgnoreFields(AppGetOptions{}, "IO"), cmpopts.IgnoreFields(AppListOptions{}, "IO"),
	cmpopts.IgnoreFields(AppDeleteOptions{}, "IO"), cmpopts.IgnoreFields(AppOperationOptions{}, "IO")}

func ptr[T any](v T) *T { return &v }

func checkUsage(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("error %v, want the usage error %q", err, want)
	}
}

func TestAppApplyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    apicmd.ApplyOptions
		wantErr string
	}{
		{args: []string{"-f", "a.yaml", "--cluster", "prod-eu", "--cluster", "prod-us,staging"},
			want: apicmd.ApplyOptions{Write: apicmd.WriteFlags{Output: "table"}, Files: []string{"a.yaml"}, Clusters: []string{"prod-eu", "prod-us", "staging"}, Namespace: "argocd", Prune: "delete"}},
		{args: []string{"-f", "-", "-f", "dir", "--cluster", "c", "-n", "apps", "--if-generation", "0", "--dry-run", "-o", "yaml"},
			want: apicmd.ApplyOptions{Write: apicmd.WriteFlags{Output: "yaml", DryRun: true}, Files: []string{"-", "dir"}, Clusters: []string{"c"},
				Namespace: "apps", NamespaceSet: true, IfGeneration: ptr(int64(0)), Prune: "delete"}},
		{args: []string{"-f", "a.yaml", "--selector", "env=staging", "--prune", "orphan"},
			want: apicmd.ApplyOptions{Write: apicmd.WriteFlags{Output: "table"}, Files: []string{"a.yaml"}, Namespace: "argocd",
				Selector: "env=staging", Prune: "orphan", Placement: true}},
		{args: []string{"-f", "a.yaml", "--selector", "env=staging", "--cluster", "c"}, wantErr: "give --cluster or --selector, not both"},
		{args: []string{"-f", "a.yaml", "--selector", "env=staging", "--prune", "keep"}, wantErr: `--prune "keep": want delete or orphan`},
		{args: []string{"--cluster", "c"}, wantErr: "-f is required"},
		{args: []string{"-f", "a.yaml"}, wantErr: "--cluster is required"},
		{args: []string{"-f", "-", "-f", "-", "--cluster", "c"}, wantErr: "-f -: standard input can be read once"},
		{args: []string{"-f", "a", "--cluster", "a,b", "--if-generation", "1"}, wantErr: "--if-generation applies to one object on one cluster"},
		{args: []string{"-f", "a", "--cluster", "a", "extra"}, wantErr: `unknown command "extra"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdAppApply, tc.args)
			if tc.wantErr != "" {
				checkUsage(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.ApplyOptions, ignore); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppReadFlags(t *testing.T) {
	get, err := cmdtest.Parse(t, NewCmdAppGet, []string{"guestbook", "--cluster", "prod-eu", "-n", "apps", "-o", "json"})
	if want := (AppGetOptions{Output: "json", Name: "guestbook", Cluster: "prod-eu", Namespace: "apps"}); err != nil || !cmp.Equal(want, *get, ignore) {
		t.Errorf("get: %v (-want +got):\n%s", err, cmp.Diff(want, *get, ignore))
	}
	_, err = cmdtest.Parse(t, NewCmdAppGet, nil)
	checkUsage(t, err, "accepts 1 arg(s), received 0")
	list, err := cmdtest.Parse(t, NewCmdAppList, []string{"--cluster", "prod-eu", "--project", "", "--deleted"})
	if want := (AppListOptions{Output: "table", Cluster: "prod-eu", ProjectSet: true, Deleted: true}); err != nil || !cmp.Equal(want, *list, ignore) {
		t.Errorf("list: %v (-want +got):\n%s", err, cmp.Diff(want, *list, ignore))
	}
	list, err = cmdtest.Parse(t, NewCmdAppList, []string{"-A", "-n", "apps"})
	if want := (AppListOptions{Output: "table", Namespace: "apps", AllProjects: true}); err != nil || !cmp.Equal(want, *list, ignore) {
		t.Errorf("list -A: %v (-want +got):\n%s", err, cmp.Diff(want, *list, ignore))
	}
	_, err = cmdtest.Parse(t, NewCmdAppList, []string{"-A", "--project", "p"})
	checkUsage(t, err, "give --project or --all-projects, not both")
}

func TestAppDeleteAndOperationFlags(t *testing.T) {
	table := apicmd.WriteFlags{Output: "table"}
	del, err := cmdtest.Parse(t, NewCmdAppDelete, []string{"guestbook", "--cluster", "prod-eu", "--cascade=false", "--if-generation", "3"})
	if want := (AppDeleteOptions{Write: table, Name: "guestbook", Cluster: "prod-eu", Namespace: "argocd", IfGeneration: ptr(int64(3))}); err != nil || !cmp.Equal(want, *del, ignore) {
		t.Errorf("delete: %v (-want +got):\n%s", err, cmp.Diff(want, *del, ignore))
	}
	del, err = cmdtest.Parse(t, NewCmdAppDelete, []string{"guestbook", "--cluster", "c", "-n", "apps"})
	if err != nil || !del.Cascade || del.Namespace != "apps" || del.IfGeneration != nil {
		t.Errorf("delete: %+v, %v: want cascade by default", del, err)
	}
	_, err = cmdtest.Parse(t, NewCmdAppDelete, []string{"guestbook"})
	checkUsage(t, err, "--cluster is required")

	tests := []struct {
		newCmd  func(cmdkit.IOStreams, func(ctx context.Context, o *AppOperationOptions) error) *cobra.Command
		args    []string
		want    AppOperationOptions
		wantErr string
	}{
		{newCmd: NewCmdAppSync, args: []string{"guestbook", "--cluster", "c", "--revision", "v1.2", "--prune", "--dry-run"},
			want: AppOperationOptions{Write: apicmd.WriteFlags{Output: "table", DryRun: true}, Operation: "sync", Name: "guestbook", Cluster: "c", Namespace: "argocd", Revision: "v1.2", Prune: true, Timeout: 15 * time.Minute}},
		{newCmd: NewCmdAppRefresh, args: []string{"guestbook", "--cluster", "c", "--refresh-type", "hard", "-n", "apps"},
			want: AppOperationOptions{Write: table, Operation: "refresh", Name: "guestbook", Cluster: "c", Namespace: "apps", RefreshType: "hard", Timeout: 15 * time.Minute}},
		{newCmd: NewCmdAppRefresh, args: []string{"guestbook", "--cluster", "c"},
			want: AppOperationOptions{Write: table, Operation: "refresh", Name: "guestbook", Cluster: "c", Namespace: "argocd", RefreshType: "normal", Timeout: 15 * time.Minute}},
		{newCmd: NewCmdAppRollback, args: []string{"guestbook", "--cluster", "c", "--history-id", "12"},
			want: AppOperationOptions{Write: table, Operation: "rollback", Name: "guestbook", Cluster: "c", Namespace: "argocd", HistoryID: ptr(int64(12)), Timeout: 15 * time.Minute}},
		// Argo CD's history ids start at 0: the first deployment.
		{newCmd: NewCmdAppRollback, args: []string{"guestbook", "--cluster", "c", "--history-id", "0"},
			want: AppOperationOptions{Write: table, Operation: "rollback", Name: "guestbook", Cluster: "c", Namespace: "argocd", HistoryID: ptr(int64(0)), Timeout: 15 * time.Minute}},
		{newCmd: NewCmdAppRollback, args: []string{"guestbook", "--cluster", "c", "--history-id", "-1"}, wantErr: "--history-id -1: want a history entry"},
		{newCmd: NewCmdAppTerminate, args: []string{"guestbook", "--cluster", "c", "-o", "json"},
			want: AppOperationOptions{Write: apicmd.WriteFlags{Output: "json"}, Operation: "terminate", Name: "guestbook", Cluster: "c", Namespace: "argocd", Timeout: 15 * time.Minute}},
		{newCmd: NewCmdAppSync, args: []string{"guestbook", "--cluster", "c", "--wait", "--timeout", "2m"},
			want: AppOperationOptions{Write: table, Operation: "sync", Name: "guestbook", Cluster: "c", Namespace: "argocd", Wait: true, Timeout: 2 * time.Minute}},
		{newCmd: NewCmdAppSync, args: []string{"guestbook", "--cluster", "c", "--wait", "--timeout", "0s"}, wantErr: "--timeout must be a positive duration"},
		{newCmd: NewCmdAppSync, args: []string{"guestbook"}, wantErr: "--cluster is required"},
		{newCmd: NewCmdAppRefresh, args: []string{"guestbook", "--cluster", "c", "--refresh-type", "soft"}, wantErr: `--refresh-type "soft": want normal or hard`},
		{newCmd: NewCmdAppRollback, args: []string{"guestbook", "--cluster", "c"}, wantErr: "--history-id is required"},
		{newCmd: NewCmdAppTerminate, args: []string{"guestbook", "--cluster", "c", "--revision", "x"}, wantErr: "unknown flag: --revision"},
		{newCmd: NewCmdAppSync, args: []string{"--cluster", "c"}, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, tc.newCmd, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, ignore); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// fleetHub is a hub holding the clusters, AppProjects and Applications of
// readtest.Fleet, the Applications at the generations that fleet tells of
// (old deleted at 3), and serving readAPI as its read API when it is not
// nil.
func fleetHub(t *testing.T, readAPI http.Handler) *cmdtest.Hub {
	t.Helper()
	var opts []hub.Option
	if readAPI != nil {
		opts = append(opts, hub.WithReadAPI(readAPI))
	}
	h := cmdtest.StartHub(t, opts...)
	h.Register(nil, "prod-eu", "prod-us")
	for _, p := range []string{"web", "payments"} {
		h.Apply(api.KindAppProjects, cmdtest.ProjectManifest(p), "prod-eu", "prod-us")
	}
	applyUntil(h, "prod-eu", "billing", "payments", 5)
	applyUntil(h, "prod-eu", "guestbook", "web", 4)
	applyUntil(h, "prod-us", "guestbook", "web", 2)
	applyUntil(h, "prod-us", "old", "web", 2)
	if _, err := h.Client.Delete(t.Context(), api.KindApplications, "prod-us", "argocd", "old", true, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// fleetRead is the read API of readtest.Fleet.
func fleetRead() http.Handler { return read.New(readtest.Fleet(), read.WithClock(readtest.Now)) }

// applyUntil applies the Application name of project to cluster until it
// is at generation gen, each time at another revision.
func applyUntil(h *cmdtest.Hub, cluster, name, project string, gen int) {
	for i := range gen {
		m := strings.Replace(cmdtest.AppManifest(name, project), `"targetRevision":"main"`, fmt.Sprintf(`"targetRevision":"v%d"`, i+1), 1)
		h.Apply(api.KindApplications, m, cluster)
	}
}

// run runs `argosy app` args against h with token.
func run(t *testing.T, h *cmdtest.Hub, token, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return cmdtest.RunWithInput(t, NewCmdApp, stdin, append(append([]string{"app"}, args...), "--server", h.URL, "--token", token)...)
}

// TestAppGetAndList checks app get, the hub's word joined with the read
// API's, with and without a read API, and app list with the context's
// project.
func TestAppGetAndList(t *testing.T) {
	path := cmdtest.Isolate(t)
	h := fleetHub(t, fleetRead())
	tests := []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"get", "guestbook"}, "CLUSTER  NAMESPACE  NAME       PROJECT  SYNC    HEALTH   REVISION  GENERATION  STATE    REPORTED\n" +
			"prod-eu  argocd     guestbook  web      Synced  Healthy  4f2a9c1   3/4         pending  Connected\n" +
			"prod-us  argocd     guestbook  web      Synced  Healthy  4f2a9c1   2/2         applied  Stale 5m0s\n", ""},
		{[]string{"get", "billing", "--cluster", "prod-eu"}, "CLUSTER  NAMESPACE  NAME     PROJECT   SYNC       HEALTH    REVISION  GENERATION  STATE              REPORTED\n" +
			"prod-eu  argocd     billing  payments  OutOfSync  Degraded  4f2a9c1   4/5         rejected: invalid  Connected\n", ""},
		{[]string{"get", "old"}, "CLUSTER  NAMESPACE  NAME  PROJECT  SYNC  HEALTH  REVISION  GENERATION  STATE    REPORTED\nprod-us  argocd     old   web      -     -       -         0/3         deleted  -\n", ""},
		{[]string{"list"}, "CLUSTER  NAMESPACE  NAME       PROJECT   GENERATION\nprod-eu  argocd     billing    payments  5\n" +
			"prod-eu  argocd     guestbook  web       4\nprod-us  argocd     guestbook  web       2\n", ""},
		{[]string{"list", "--cluster", "prod-us", "--deleted"}, "CLUSTER  NAMESPACE  NAME       PROJECT  GENERATION\nprod-us  argocd     guestbook  web      2\n" +
			"prod-us  argocd     old        web      3 (deleted)\n", ""},
		{[]string{"list", "--project", "nope"}, "", "No Applications.\n"},
	}
	for _, tc := range tests {
		stdout, stderr, err := run(t, h, h.Viewer, "", tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.stdout, stdout); diff != "" || stderr != tc.stderr {
			t.Errorf("%s: stdout (-want +got):\n%s\nstderr %q, want %q", tc.args, diff, stderr, tc.stderr)
		}
	}
	var views []AppView
	stdout, _, err := run(t, h, h.Viewer, "", "get", "guestbook", "--cluster", "prod-us", "-o", "json")
	if err != nil || json.Unmarshal([]byte(stdout), &views) != nil || len(views) != 1 || views[0].Hub.Generation != 2 ||
		views[0].Status == nil || views[0].Status.Health.Status != "Healthy" {
		t.Errorf("get -o json: %v\n%s", err, stdout)
	}
	if _, _, err := run(t, h, h.Viewer, "", "get", "ghost", "--cluster", "prod-eu"); err == nil ||
		err.Error() != `the hub has no Application "ghost" on cluster "prod-eu"; argosy app list shows those it has` {
		t.Errorf("get ghost: %v", err)
	}

	// The context's project applies unless --project or -A says else.
	cfg := &config.Config{CurrentContext: "hub", Contexts: []config.Context{{Name: "hub", Server: h.URL, Token: h.Viewer, Project: "payments"}}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
	}{
		{nil, "CLUSTER  NAMESPACE  NAME     PROJECT   GENERATION\nprod-eu  argocd     billing  payments  5\n", "Project payments, context \"hub\"'s; -A lists every project.\n"},
		{[]string{"--project", "web", "--cluster", "prod-us"}, "CLUSTER  NAMESPACE  NAME       PROJECT  GENERATION\nprod-us  argocd     guestbook  web      2\n", ""},
		{[]string{"-A", "-n", "nope"}, "", "No Applications.\n"},
	} {
		stdout, stderr, err := cmdtest.Run(t, NewCmdApp, append([]string{"app", "list"}, tc.args...)...)
		if err != nil || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("list %s: %v\nstdout\n%s\nstderr %q\nwant\n%s\n%q", tc.args, err, stdout, stderr, tc.stdout, tc.stderr)
		}
	}
}

// TestAppGetWithoutReadAPI checks that app get shows the hub's word with
// unknown status, and says why, when the hub serves no read API.
func TestAppGetWithoutReadAPI(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, nil)
	stdout, stderr, err := run(t, h, h.Viewer, "", "get", "guestbook", "--cluster", "prod-eu")
	want := "CLUSTER  NAMESPACE  NAME       PROJECT  SYNC  HEALTH  REVISION  GENERATION  STATE    REPORTED\nprod-eu  argocd     guestbook  web      -     -       -         ?/4         unknown  -\n"
	if err != nil || stdout != want || !strings.HasPrefix(stderr, "Note: no status from the read API, so SYNC, HEALTH and STATE are unknown: server answered 404 Not Found") {
		t.Errorf("%v\nstdout\n%s\nstderr %s", err, stdout, stderr)
	}
}

// TestAppStatusWhileViewsCatchUp: right after an apply, the hub knows an
// Application that the projector has not folded yet. app status says so,
// with the generations the hub holds, instead of that there is no such
// Application; one that neither knows is still "no Application". The read
// API here has folded nothing at all, so the projector is behind for sure.
func TestAppStatusWhileViewsCatchUp(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, read.New(&readtest.Query{}, read.WithClock(readtest.Now)))
	behind := "but the fleet views have not caught up yet (the projector folds the log a moment behind); run the command again"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"guestbook"}, []string{"argocd/guestbook was applied to prod-eu at generation 4 and to prod-us at generation 2, " + behind,
			"argosy app get guestbook shows the hub's word now"}},
		// The views have not even folded the cluster yet.
		{[]string{"guestbook", "--cluster", "prod-us"}, []string{"argocd/guestbook was applied to prod-us at generation 2, " + behind,
			"argosy app get guestbook --cluster prod-us shows"}},
		{[]string{"ghost"}, []string{`no Application "ghost": argosy app list shows those the hub has`}},
		{[]string{"old", "--cluster", "prod-us"}, []string{`no Application "old" on cluster "prod-us": argosy app list shows`}},
	} {
		_, _, err := run(t, h, h.Viewer, "", append([]string{"status"}, tc.args...)...)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("status %s: %v, want it to say %q", tc.args, err, w)
			}
		}
	}
}

const twoApps = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
spec:
  project: web
  source: {repoURL: "https://git.example/apps.git", path: guestbook, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: billing, namespace: argocd}
spec:
  project: payments
  source: {repoURL: "https://git.example/apps.git", path: billing, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: billing}
`

// TestAppApply applies manifests against a hub: what is sent, what
// is printed, a dry run, and a failure part-way.
func TestAppApply(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, nil)
	file := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(file, []byte(twoApps), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, h, h.Admin, "", "apply", "-f", file, "--cluster", "prod-eu,prod-us", "--dry-run")
	want := "TYPE                  CLUSTER  KIND          NAMESPACE  NAME       GENERATION  OFFSET\n" +
		"application.upserted  prod-eu  applications  argocd     guestbook  5           dry run\n" +
		"application.upserted  prod-us  applications  argocd     guestbook  3           dry run\n" +
		"application.upserted  prod-eu  applications  argocd     billing    6           dry run\n" +
		"application.upserted  prod-us  applications  argocd     billing    1           dry run\n"
	wantErr := "Dry run: the hub wrote nothing.\n" +
		"Would apply argocd/guestbook to 2 clusters (prod-eu, prod-us).\nWould apply argocd/billing to 2 clusters (prod-eu, prod-us).\n" +
		"Note: no diff of argocd/guestbook: the hub serves no read API, which holds the specs the clusters have\n" +
		"Note: no diff of argocd/billing: the hub serves no read API, which holds the specs the clusters have\n"
	if err != nil || stdout != want || stderr != wantErr {
		t.Fatalf("dry run: %v\nstdout\n%s\nwant\n%s\nstderr %q", err, stdout, want, stderr)
	}
	reqs := h.Requests()
	var first api.ApplyRequest
	if err := json.Unmarshal([]byte(reqs[0].Body), &first); err != nil {
		t.Fatal(err)
	}
	if reqs[0].Path != "/api/v1/applications" || reqs[0].Query != "dryRun=true" || !cmp.Equal(first.Clusters, []string{"prod-eu", "prod-us"}) ||
		string(first.Manifest) != `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"guestbook","namespace":"argocd"},`+
			`"spec":{"destination":{"namespace":"web","server":"https://kubernetes.default.svc"},"project":"web",`+
			`"source":{"path":"guestbook","repoURL":"https://git.example/apps.git","targetRevision":"main"}}}` {
		t.Errorf("first request %s?%s: %s", reqs[0].Path, reqs[0].Query, reqs[0].Body)
	}
	if k1, k2 := reqs[0].Header.Get(api.HeaderIdempotencyKey), reqs[1].Header.Get(api.HeaderIdempotencyKey); k2 != k1+"-2" {
		t.Errorf("keys %q, %q: want the second the first's -2", k1, k2)
	}

	// The second object fails, the hub finding it invalid: the first's
	// events are printed, and the error says what was and was not applied.
	broken := twoApps[:strings.LastIndex(twoApps, "  source:")]
	stdout, _, err = run(t, h, h.Admin, broken, "apply", "-f", "-", "--cluster", "prod-eu")
	wantErr = "standard input, document 2: Application \"billing\": the hub refused the request (400 Bad Request): manifest: spec.destination: required\n" +
		"  manifest.spec.destination: required\n" +
		"  1 of the 2 objects were applied before it (printed above); the rest were not sent"
	if err == nil || err.Error() != wantErr {
		t.Errorf("error\n%v\nwant\n%s", err, wantErr)
	}
	guestbook := h.Object(api.KindApplications, "prod-eu", "argocd", "guestbook")
	if want := "TYPE                  CLUSTER  KIND          NAMESPACE  NAME       GENERATION  OFFSET\n" +
		fmt.Sprintf("application.upserted  prod-eu  applications  argocd     guestbook  5           %d@%d\n", guestbook.Partition, guestbook.Offset); stdout != want {
		t.Errorf("stdout\n%s\nwant\n%s", stdout, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", file, "--cluster", "prod-eu", "--if-generation", "4"}, "--if-generation applies to one object, and 2 were read"},
		{[]string{"apply", "-f", "-", "--cluster", "prod-eu", "-n", "apps"}, `metadata.namespace "argocd" does not match --namespace "apps"`},
		{[]string{"apply", "-f", file, "--cluster", "nope"}, "the hub refused the request (404 Not Found): cluster \"nope\" is not registered\n  clusters[0]: no such cluster"},
	} {
		if _, _, err := run(t, h, h.Admin, twoApps, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.args, err, tc.want)
		}
	}
	project := "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: web}\n"
	if _, _, err := run(t, h, h.Admin, project, "apply", "-f", "-", "--cluster", "prod-eu"); err == nil ||
		err.Error() != `standard input: kind "AppProject": this command applies Applications; apply AppProjects with argosy project apply` {
		t.Errorf("apply a project: %v", err)
	}
}

// TestAppDeleteAndOperate checks what app delete and the operations send.
func TestAppDeleteAndOperate(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, nil)
	tests := []struct {
		args                []string
		method, path, query string
		ifMatch             string
		body                string
	}{
		{[]string{"delete", "guestbook", "--cluster", "prod-eu", "--cascade=false", "--if-generation", "4"}, "DELETE",
			"/api/v1/clusters/prod-eu/applications/argocd/guestbook", "cascade=false", `"4"`, ""},
		{[]string{"sync", "guestbook", "--cluster", "prod-us", "--revision", "v2", "--prune"}, "POST",
			"/api/v1/clusters/prod-us/applications/argocd/guestbook/operations", "", "", `{"operation":"sync","revision":"v2","prune":true}`},
		{[]string{"refresh", "guestbook", "--cluster", "prod-us", "--refresh-type", "hard"}, "POST",
			"/api/v1/clusters/prod-us/applications/argocd/guestbook/operations", "", "", `{"operation":"refresh","refreshType":"hard"}`},
		{[]string{"rollback", "guestbook", "--cluster", "prod-us", "--history-id", "7", "--dry-run"}, "POST",
			"/api/v1/clusters/prod-us/applications/argocd/guestbook/operations", "dryRun=true", "", `{"operation":"rollback","historyId":7}`},
		{[]string{"terminate", "guestbook", "--cluster", "prod-us"}, "POST",
			"/api/v1/clusters/prod-us/applications/argocd/guestbook/operations", "", "", `{"operation":"terminate"}`},
	}
	for _, tc := range tests {
		stdout, _, err := run(t, h, h.Admin, "", tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		reqs := h.Requests()
		r := reqs[len(reqs)-1]
		if r.Method != tc.method || r.Path != tc.path || r.Query != tc.query || r.Header.Get(api.HeaderIfMatch) != tc.ifMatch || r.Body != tc.body {
			t.Errorf("%s sent %s %s?%s If-Match %q %s", tc.args, r.Method, r.Path, r.Query, r.Header.Get(api.HeaderIfMatch), r.Body)
		}
		if !strings.HasPrefix(stdout, "TYPE ") {
			t.Errorf("%s printed\n%s", tc.args, stdout)
		}
	}
	_, _, err := run(t, h, h.Viewer, "", "sync", "guestbook", "--cluster", "prod-us")
	if err == nil || !strings.Contains(err.Error(), "refused the request (403 Forbidden)") {
		t.Errorf("viewer syncs: %v", err)
	}
	_, _, err = run(t, h, h.Admin, "", "sync", "ghost", "--cluster", "prod-us")
	if err == nil || err.Error() != "the hub refused the request (404 Not Found): no Application argocd/ghost on cluster \"prod-us\"\n  next: argosy app list --cluster prod-us" {
		t.Errorf("sync ghost: %v", err)
	}
}

func TestAppWritesHelp(t *testing.T) {
	var cmds [][]string
	for _, verb := range []string{"list", "get", "apply", "delete", "sync", "refresh", "rollback", "terminate", "adopt"} {
		cmds = append(cmds, []string{"app", verb})
	}
	cmdtest.ReadCommandsHelp(t, NewCmdApp, cmds...)
}

// TestAppGetShowsPlacement checks that app get names the placement that
// wrote an Application, and its generation, when one did.
func TestAppGetShowsPlacement(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	h.Register(map[string]string{"placed": "yes"}, "s1")
	h.Register(nil, "s2")
	h.Apply(api.KindApplications, cmdtest.AppManifest("web", "default"), "s2")
	if _, err := h.Client.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "placed=yes", Manifest: json.RawMessage(cmdtest.AppManifest("web", "default"))},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if objs, err := h.Client.Objects(t.Context(), "s1", api.KindApplications); err == nil && len(objs) == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the placement never placed web on s1: %v, %v", objs, err)
		}
	}
	stdout, _, err := run(t, h, h.Viewer, "", "get", "web")
	want := "CLUSTER  NAMESPACE  NAME  PROJECT  SYNC  HEALTH  REVISION  GENERATION  STATE    REPORTED  PLACEMENT\n" +
		"s1       argocd     web   default  -     -       -         ?/1         unknown  -         web@1\n" +
		"s2       argocd     web   default  -     -       -         ?/1         unknown  -         -\n"
	if err != nil || stdout != want {
		t.Errorf("app get: %v\n%s\nwant\n%s", err, stdout, want)
	}
}

// TestAppApplyCommit checks what --commit-time and --commit-revision
// send: the commit named, or the manifest's target revision when it is a
// commit id; and the errors when there is no commit id to send.
func TestAppApplyCommit(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, nil)
	const sha = "4f2a9c1d6e8b0a2c4e6f8a0b2c4d6e8f0a1b2c3d"
	pinned := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: guestbook}\nspec: {project: web, source: {repoURL: \"https://git.example/apps.git\", path: guestbook, targetRevision: " + sha + "},\n" +
		"  destination: {server: \"https://kubernetes.default.svc\", namespace: web}}\n"
	sent := func() *api.SourceCommit {
		t.Helper()
		reqs := h.Requests()
		var req api.ApplyRequest
		if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Body), &req); err != nil {
			t.Fatal(err)
		}
		return req.Commit
	}
	if _, _, err := run(t, h, h.Admin, pinned, "apply", "-f", "-", "--cluster", "prod-eu", "--commit-time", "2026-11-20T10:04:05Z"); err != nil {
		t.Fatal(err)
	}
	if c := sent(); c == nil || c.Revision != sha || !c.CommittedAt.Equal(time.Date(2026, 11, 20, 10, 4, 5, 0, time.UTC)) {
		t.Errorf("commit sent %+v, want %s at 2026-11-20T10:04:05Z", c, sha)
	}
	other := strings.Repeat("ab", 20)
	if _, _, err := run(t, h, h.Admin, twoApps, "apply", "-f", "-", "--cluster", "prod-eu", "--commit-time", "2026-11-20T10:04:05+01:00",
		"--commit-revision", other); err != nil {
		t.Fatal(err)
	}
	if c := sent(); c == nil || c.Revision != other {
		t.Errorf("commit sent %+v, want %s", c, other)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{twoApps, []string{"--commit-time", "2026-11-20T10:04:05Z"}, "--commit-time needs --commit-revision: spec.source.targetRevision"},
		{pinned, []string{"--commit-time", "yesterday"}, `--commit-time "yesterday": want RFC 3339`},
		{pinned, []string{"--commit-revision", sha}, "--commit-revision needs --commit-time"},
		{pinned, []string{"--commit-time", "2026-11-20T10:04:05Z", "--commit-revision", "abc123"}, `--commit-revision "abc123": want the commit's full id`},
	} {
		if _, _, err := run(t, h, h.Admin, tc.stdin, append([]string{"apply", "-f", "-", "--cluster", "prod-eu"}, tc.args...)...); err == nil ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
