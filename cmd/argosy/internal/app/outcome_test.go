package app

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// scriptedRead is readtest.Fleet's read API whose Applications are, at
// its nth call of Apps, steps[n] (the last step once they run out).
type scriptedRead struct {
	*readtest.Query
	mu    sync.Mutex
	steps [][]projector.AppRow
	calls int
}

func (q *scriptedRead) Apps(_ context.Context, f projector.AppFilter) ([]projector.AppRow, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	rows := q.steps[min(q.calls, len(q.steps)-1)]
	q.calls++
	var out []projector.AppRow
	for _, a := range rows {
		if (f.Namespace == "" || a.Namespace == f.Namespace) && (f.Name == "" || a.Name == f.Name) && (f.Cluster == "" || a.Cluster == f.Cluster) {
			out = append(out, a)
		}
	}
	return out, nil
}

func scripted(steps ...[]projector.AppRow) *scriptedRead {
	return &scriptedRead{Query: readtest.Fleet(), steps: steps}
}

// row is guestbook's row on cluster: the hub wants gen with spec; its
// agent applied applied (none if 0), Argo CD reports sync and health.
func row(cluster string, gen int64, spec string, applied int64, sync, health string) projector.AppRow {
	key := projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: "guestbook"}
	r := projector.AppRow{AppKey: key, Desired: &projector.AppDesired{AppKey: key, Project: "web", Generation: gen, Spec: json.RawMessage(spec)}}
	if applied > 0 {
		r.Observed = &projector.AppObserved{AppKey: key, AppliedGeneration: applied,
			Sync: &schemas.SyncStatus{Status: sync}, Health: &schemas.HealthStatus{Status: health}}
	}
	return r
}

// specAt is cmdtest.AppManifest's spec at targetRevision rev.
func specAt(rev string) string {
	var m struct{ Spec json.RawMessage }
	if err := json.Unmarshal([]byte(strings.Replace(cmdtest.AppManifest("guestbook", "web"), `"main"`, `"`+rev+`"`, 1)), &m); err != nil {
		panic(err)
	}
	return string(m.Spec)
}

// TestAppApplyDryRunDiff checks that a dry run says which clusters the
// manifest would change and how: one diff for the clusters that hold the
// same spec, new where it is not, unchanged where it is the same.
func TestAppApplyDryRunDiff(t *testing.T) {
	cmdtest.Isolate(t)
	q := scripted([]projector.AppRow{row("prod-eu", 4, specAt("v4"), 4, "Synced", "Healthy"), row("prod-us", 2, specAt("v2"), 2, "Synced", "Healthy")})
	h := fleetHub(t, read.New(q, read.WithClock(readtest.Now)))
	h.Register(nil, "staging", "qa")
	h.Apply(api.KindAppProjects, cmdtest.ProjectManifest("web"), "staging", "qa")
	h.Apply(api.KindApplications, strings.Replace(cmdtest.AppManifest("guestbook", "web"), `"main"`, `"v2"`, 1), "qa")
	q.steps[0] = append(q.steps[0], row("qa", 1, specAt("v2"), 1, "Synced", "Healthy"))

	manifest := strings.Replace(cmdtest.AppManifest("guestbook", "web"), `"main"`, `"v2"`, 1)
	stdout, stderr, err := run(t, h, h.Admin, manifest, "apply", "-f", "-", "--cluster", "prod-eu,prod-us,staging,qa", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	want := "TYPE                  CLUSTER  KIND          NAMESPACE  NAME       GENERATION  OFFSET\n" +
		"application.upserted  prod-eu  applications  argocd     guestbook  5           dry run\n" +
		"application.upserted  prod-us  applications  argocd     guestbook  3           dry run\n" +
		"application.upserted  staging  applications  argocd     guestbook  1           dry run\n" +
		"application.upserted  qa       applications  argocd     guestbook  2           dry run\n" +
		"\nargocd/guestbook on 1 cluster (prod-eu), at generation 4:\n--- the spec they hold\n+++ the manifest's\n" +
		"@@ -5,4 +5,4 @@\n source:\n   path: web\n   repoURL: https://git.example/apps.git\n-  targetRevision: v4\n+  targetRevision: v2\n" +
		"\nargocd/guestbook on 1 cluster (staging): new.\n" +
		"\nargocd/guestbook on 2 clusters (prod-us, qa): the spec is unchanged.\n"
	wantErr := "Dry run: the hub wrote nothing.\nWould apply argocd/guestbook to 4 clusters (prod-eu, prod-us, qa, staging).\n"
	if diff := cmp.Diff(want, stdout); diff != "" || stderr != wantErr {
		t.Errorf("stdout (-want +got):\n%s\nstderr %q\nwant   %q", diff, stderr, wantErr)
	}

	// A view behind the hub is said to be.
	q.steps[0][0].Desired.Generation = 3
	if _, stderr, err := run(t, h, h.Admin, manifest, "apply", "-f", "-", "--cluster", "prod-eu", "--dry-run"); err != nil ||
		!strings.Contains(stderr, "Note: the fleet view holds generation 3 of argocd/guestbook on prod-eu, the hub 4: the diff is against the view's, which is catching up\n") {
		t.Errorf("a view behind: %v\n%s", err, stderr)
	}
	// Without a read API there is no diff, and a note says why.
	bare := fleetHub(t, nil)
	if _, stderr, err := run(t, bare, bare.Admin, manifest, "apply", "-f", "-", "--cluster", "prod-eu", "--dry-run"); err != nil ||
		!strings.HasSuffix(stderr, "Note: no diff of argocd/guestbook: the hub serves no read API, which holds the specs the clusters have\n") {
		t.Errorf("no read API: %v\n%s", err, stderr)
	}
}

// TestAppApplyWait follows an apply to two clusters through pending and
// progressing to converged, and to a failure and a timeout.
func TestAppApplyWait(t *testing.T) {
	cmdtest.Isolate(t)
	v4, v5, v2, v3 := specAt("v4"), specAt("v5"), specAt("v2"), specAt("v3")
	q := scripted(
		[]projector.AppRow{row("prod-eu", 4, v4, 4, "Synced", "Healthy"), row("prod-us", 2, v2, 2, "Synced", "Healthy")},
		[]projector.AppRow{row("prod-eu", 5, v5, 5, "OutOfSync", "Progressing"), row("prod-us", 3, v3, 2, "Synced", "Healthy")},
		[]projector.AppRow{row("prod-eu", 5, v5, 5, "Synced", "Healthy"), row("prod-us", 3, v3, 3, "Synced", "Healthy")},
	)
	h := fleetHub(t, read.New(q, read.WithClock(readtest.Now)))
	waitArgs := func(timeout string) []string {
		return []string{"apply", "-f", "-", "--cluster", "prod-eu,prod-us", "--wait", "--timeout", timeout}
	}
	manifest := func(rev string) string {
		return strings.Replace(cmdtest.AppManifest("guestbook", "web"), `"main"`, `"`+rev+`"`, 1)
	}
	_, stderr, err := runEvery(t, h, manifest("v5"), waitArgs("1m")...)
	want := "Applied argocd/guestbook to 2 clusters (prod-eu, prod-us); their agents apply it next: argosy app status guestbook shows where it stands, --wait follows it.\n" +
		"Waiting up to 1m0s for argocd/guestbook to converge (applied, Synced and Healthy).\n" +
		"argocd/guestbook: 0 of 2 clusters converged, 2 pending (1 Stale: no recent heartbeat, so their reports may be old); prod-eu: its agent has applied generation 4, not yet 5\n" +
		"argocd/guestbook: 0 of 2 clusters converged, 1 progressing, 1 pending (1 Stale: no recent heartbeat, so their reports may be old); prod-eu: applied; OutOfSync, Progressing\n" +
		"argocd/guestbook: 2 of 2 clusters converged (1 Stale: no recent heartbeat, so their reports may be old)\n"
	if err != nil || stderr != want {
		t.Fatalf("%v\nstderr (-want +got):\n%s", err, cmp.Diff(want, stderr))
	}

	// prod-us rejects generation 4; prod-eu's sync fails after the apply.
	failed := row("prod-eu", 6, v5, 6, "OutOfSync", "Degraded")
	failed.Observed.Operation = &schemas.OperationState{Phase: schemas.OperationPhaseFailed, Message: "one or more tasks failed", StartedAt: time.Now()}
	rejected := row("prod-us", 4, v5, 3, "Synced", "Healthy")
	rejected.Observed.Rejected = &projector.Rejection{Generation: 4, Code: schemas.RejectInvalid, Reason: "spec.source.repoURL is empty"}
	q.mu.Lock()
	q.steps, q.calls = [][]projector.AppRow{{failed, rejected}}, 0
	q.mu.Unlock()
	_, _, err = runEvery(t, h, manifest("v6"), waitArgs("1m")...)
	wantErr := "2 of 2 clusters failed:\n  prod-eu: Argo CD's sync ended Failed: one or more tasks failed\n" +
		"  prod-us: rejected generation 4 (invalid): spec.source.repoURL is empty"
	if err == nil || err.Error() != wantErr {
		t.Errorf("failures: %v\nwant %s", err, wantErr)
	}

	// A failed operation older than the apply is not the apply's.
	failed.Observed.Operation.StartedAt = time.Now().Add(-time.Hour)
	failed.Desired.Generation, failed.Observed.AppliedGeneration = 7, 7
	q.mu.Lock()
	q.steps, q.calls = [][]projector.AppRow{{failed}}, 0
	q.mu.Unlock()
	_, _, err = runEvery(t, h, manifest("v7"), "apply", "-f", "-", "--cluster", "prod-eu", "--wait", "--timeout", "2s")
	var exit *cmdkit.ExitError
	if !errors.As(err, &exit) || exit.Code != cmdkit.ExitTimeout || err.Error() != "gave up waiting after 2s for argocd/guestbook: "+
		"1 of 1 clusters had not converged:\n  prod-eu: progressing: applied; OutOfSync, Degraded\n  argosy app status guestbook shows where they stand" {
		t.Errorf("timeout: %v", err)
	}
}

// runEvery runs app apply args against h, as the admin, with --wait
// asking every 10 ms.
func runEvery(t *testing.T, h *cmdtest.Hub, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	newCmd := func(io cmdkit.IOStreams) *cobra.Command {
		return NewCmdAppApply(io, func(ctx context.Context, o *AppApplyOptions) error {
			o.every = 10 * time.Millisecond
			return appApplyRun(ctx, o)
		})
	}
	return cmdtest.RunWithInput(t, newCmd, stdin, append(append([]string{}, args...), "--server", h.URL, "--token", h.Admin)...)
}

// TestAppApplyWaitPlacement follows a placement to the clusters its
// selector matches, one of which holds an Application of the same name
// that the placement does not own.
func TestAppApplyWaitPlacement(t *testing.T) {
	cmdtest.Isolate(t)
	spec := specAt("main")
	edge := func(cluster string) projector.AppRow { return row(cluster, 1, spec, 1, "Synced", "Healthy") }
	q := scripted(nil, []projector.AppRow{edge("edge-1")}, []projector.AppRow{edge("edge-1"), edge("edge-2")})
	h := fleetHub(t, read.New(q, read.WithClock(readtest.Now)))
	h.Register(map[string]string{"env": "edge"}, "edge-1", "edge-2", "edge-3")
	h.Apply(api.KindAppProjects, cmdtest.ProjectManifest("web"), "edge-1", "edge-2", "edge-3")
	h.Apply(api.KindApplications, cmdtest.AppManifest("guestbook", "web"), "edge-3")

	_, stderr, err := runEvery(t, h, cmdtest.AppManifest("guestbook", "web"), "apply", "-f", "-", "--selector", "env=edge", "--wait", "--timeout", "1m")
	wantErr := `1 of 3 clusters failed:
  edge-3: conflict: an Application of that name is not this placement's`
	if err == nil || err.Error() != wantErr {
		t.Errorf("error %v, want %s", err, wantErr)
	}
	for _, want := range []string{
		"Placed argocd/guestbook (placement generation 1) on the 3 clusters (edge-1, edge-2, edge-3) that env=edge matches now, and on each cluster that matches later",
		"argocd/guestbook: 2 of 3 clusters converged, 1 failed (2 Stale: no recent heartbeat, so their reports may be old); edge-3: conflict: an Application of that name is not this placement's\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestAppSyncWaitTimesOut checks that a wait for an operation no agent
// acknowledges ends with the exit code of a timeout.
func TestAppSyncWaitTimesOut(t *testing.T) {
	cmdtest.Isolate(t)
	h := fleetHub(t, fleetRead())
	_, _, err := run(t, h, h.Admin, "", "sync", "guestbook", "--cluster", "prod-eu", "--wait", "--timeout", "300ms")
	var exit *cmdkit.ExitError
	if !errors.As(err, &exit) || exit.Code != cmdkit.ExitTimeout || !strings.HasPrefix(err.Error(), "gave up waiting for sync of guestbook on prod-eu after 300ms") {
		t.Errorf("error %v, want a timeout", err)
	}
}
