package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
)

var ref = spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: "web"}

// specAt is the spec of an Application of the default project at
// revision rev.
func specAt(rev string) json.RawMessage {
	return json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example.com/web.git","targetRevision":"` + rev + `"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`)
}

func apply(t *testing.T, c *sim.Cluster, gen int64, rev string) {
	t.Helper()
	if err := c.Apply(t.Context(), &spoke.Object{Ref: ref, Spec: specAt(rev), Generation: gen}); err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, c *sim.Cluster) spoke.AppStatus {
	t.Helper()
	s, ok := c.Status(ref)
	if !ok {
		t.Fatal("no such Application")
	}
	return s
}

// fixed behaves the same every time: syncs of 1 s, health after 1 s.
func fixed(fail, degrade float64) sim.Behaviour {
	return sim.Behaviour{SyncTime: [2]time.Duration{time.Second, time.Second}, HealthTime: [2]time.Duration{time.Second, time.Second},
		FailRate: fail, RetryAfter: 10 * time.Second, DegradeRate: degrade, RecoverTime: [2]time.Duration{time.Minute, time.Minute}}
}

// TestSyncThenHealthy: a new Application syncs (Running, then Succeeded
// with a history entry), is Progressing, then Healthy; a new revision
// syncs again with a second history entry.
func TestSyncThenHealthy(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	s := status(t, c)
	if s.Sync.Status != sim.OutOfSync || s.Health.Status != sim.Progressing || s.Operation.Phase != sim.Running || s.Generation != 1 {
		t.Fatalf("after apply: sync %v health %v op %v", s.Sync, s.Health, s.Operation)
	}
	now := time.Now().Add(2 * time.Second)
	c.Step(now, time.Second)
	s = status(t, c)
	if s.Sync.Status != sim.Synced || s.Health.Status != sim.Progressing || s.Operation.Phase != sim.Succeeded || len(s.History) != 1 ||
		s.LastSync.Phase != sim.Succeeded || s.Sync.Revision != s.History[0].Revision || len(s.Sync.Revision) != 40 {
		t.Fatalf("after the sync: sync %v health %v op %v history %v", s.Sync, s.Health, s.Operation, s.History)
	}
	c.Step(now.Add(2*time.Second), time.Second)
	if s = status(t, c); s.Health.Status != sim.Healthy {
		t.Fatalf("health %v, want Healthy", s.Health)
	}
	first := s.Sync.Revision
	apply(t, c, 2, "v2")
	c.Step(time.Now().Add(2*time.Second), time.Second)
	s = status(t, c)
	if len(s.History) != 2 || s.History[0].ID != 0 || s.History[1].ID != 1 || s.Sync.Revision == first || s.Generation != 2 {
		t.Fatalf("after v2: history %v revision %s", s.History, s.Sync.Revision)
	}
	apply(t, c, 3, "v2") // the same source: nothing to sync
	if s = status(t, c); s.Operation.Phase != sim.Succeeded || s.Generation != 3 {
		t.Errorf("the same revision started a sync: %v", s.Operation)
	}
}

// TestFailedSyncIsRetried: a failed sync leaves the Application OutOfSync
// with a SyncError condition and a failed last sync and no history entry,
// and is tried again after RetryAfter.
func TestFailedSyncIsRetried(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(1, 0)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	now := time.Now().Add(2 * time.Second)
	c.Step(now, time.Second)
	s := status(t, c)
	if s.Sync.Status != sim.OutOfSync || s.Operation.Phase != sim.Failed || s.LastSync.Phase != sim.Failed || len(s.History) != 0 ||
		len(s.Conditions) != 1 || s.Conditions[0].Type != "SyncError" {
		t.Fatalf("after a failed sync: %+v", s)
	}
	c.Step(now.Add(11*time.Second), 11*time.Second)
	if s = status(t, c); s.Operation.Phase != sim.Running {
		t.Errorf("not retried: %v", s.Operation)
	}
}

// TestDefaultBehaviourFailsOneSyncInTen holds docs/dev.md to its word on
// argosy dev's simulated Argo CD (sim.DefaultBehaviour, which the fleet
// of argosy dev runs): about one sync in ten fails, an automated sync of
// a new revision and a sync asked for alike. The seed makes it repeatable;
// the bounds are loose, as for any seed.
func TestDefaultBehaviourFailsOneSyncInTen(t *testing.T) {
	const n = 100
	c := sim.NewCluster(sim.WithSeed(42))
	now := time.Now()
	step := func() string {
		now = now.Add(30 * time.Second) // past any sync (1-4 s), health (1-5 s) and retry (15 s)
		c.Step(now, time.Second)
		return status(t, c).Operation.Phase
	}
	var automated, asked int
	for i := range n {
		apply(t, c, int64(i+1), fmt.Sprintf("v%d", i))
		if step() == sim.Failed {
			automated++
		}
		step() // a failed one is tried again: let it end
	}
	for i := range n {
		if err := c.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestID: fmt.Sprintf("r%d", i)}); err != nil {
			t.Fatal(err)
		}
		if step() == sim.Failed {
			asked++
		}
	}
	t.Logf("failed: %d of %d automated syncs, %d of %d syncs asked for", automated, n, asked, n)
	for what, failed := range map[string]int{"automated syncs of a new revision": automated, "syncs asked for": asked} {
		if failed < 3 || failed > 20 {
			t.Errorf("%d of %d %s failed, want about one in ten (3 to 20)", failed, n, what)
		}
	}
}

// TestDegradedRecovers: an Application that turns Degraded after a sync
// recovers to Healthy after RecoverTime.
func TestDegradedRecovers(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 1)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	now := time.Now()
	c.Step(now.Add(2*time.Second), time.Second)
	c.Step(now.Add(4*time.Second), time.Second)
	if s := status(t, c); s.Health.Status != sim.Degraded || s.Health.Message == "" {
		t.Fatalf("health %v, want Degraded", s.Health)
	}
	c.Step(now.Add(2*time.Minute), time.Second)
	if s := status(t, c); s.Health.Status != sim.Healthy {
		t.Fatalf("health %v, want Healthy after recovering", s.Health)
	}
}

// TestDriftAndRevert: a local edit changes the spec's hash; Revert puts
// the desired spec back.
func TestDriftAndRevert(t *testing.T) {
	b := fixed(0, 0)
	b.DriftRate = 1e9 // certain within any step
	c := sim.NewCluster(sim.WithBehaviour(b), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	before := status(t, c).SpecHash
	c.Step(time.Now(), time.Minute)
	s := status(t, c)
	if s.SpecHash == before || s.Sync.Status != sim.OutOfSync {
		t.Fatalf("no drift: hash %s, sync %v", s.SpecHash, s.Sync)
	}
	if _, _, err := c.Revert(t.Context(), ref, specAt("v1")); err != nil {
		t.Fatal(err)
	}
	if s = status(t, c); s.SpecHash != before {
		t.Errorf("after revert: hash %s, want %s", s.SpecHash, before)
	}
}

// TestOperations: sync and rollback run as requested and are found by
// their request id; terminate fails the running operation; deleting
// delivers a deleted status.
func TestOperations(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	c.Step(time.Now().Add(2*time.Second), time.Second)
	apply(t, c, 2, "v2")
	c.Step(time.Now().Add(2*time.Second), time.Second)
	st, err := c.Inspect(t.Context(), ref, "r1")
	if err != nil || !st.Exists || st.Busy || st.Taken {
		t.Fatalf("before the rollback: %+v %v", st, err)
	}
	if err := c.Start(t.Context(), ref, spoke.Operation{Kind: schemas.OperationRollback, RequestID: "r1", HistoryID: 0, RequestedBy: "alice"}, st.Version); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestID: "r0"}, st.Version); !errors.Is(err, spoke.ErrChanged) {
		t.Errorf("a start on the version before the rollback: %v, want ErrChanged", err)
	}
	if st, _ := c.Inspect(t.Context(), ref, "r1"); !st.Taken || !st.Busy || st.Ended {
		t.Errorf("the rollback is not found running by its request id: %+v", st)
	}
	c.Step(time.Now().Add(2*time.Second), time.Second)
	if st, _ := c.Inspect(t.Context(), ref, "r1"); !st.Ended || st.Phase != sim.Succeeded || st.Busy {
		t.Errorf("the rollback did not end: %+v", st)
	}
	s := status(t, c)
	if len(s.History) != 3 || s.History[2].Revision != s.History[0].Revision || s.History[2].Initiator != "alice" || s.Sync.Status != sim.OutOfSync {
		t.Fatalf("after the rollback: history %v sync %v", s.History, s.Sync)
	}
	if err := c.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestID: "r2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationTerminate, RequestID: "r3"}); err != nil {
		t.Fatal(err)
	}
	if s = status(t, c); s.Operation.Phase != sim.Failed {
		t.Errorf("after terminate: %v", s.Operation)
	}
	var errPerm *spoke.PermanentError
	if err := c.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationRollback, HistoryID: 99}); err == nil || !asPermanent(err, &errPerm) {
		t.Errorf("rollback to a missing entry: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan spoke.AppStatus, 16)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, func(s spoke.AppStatus) { got <- s }) }()
	if s := <-got; s.Name != "web" {
		t.Fatalf("first status %+v", s)
	}
	if s := <-got; !s.ListDone {
		t.Fatalf("want ListDone, got %+v", s)
	}
	if err := c.Delete(t.Context(), ref, true); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !s.Deleted || s.Name != "web" {
		t.Fatalf("want the deletion, got %+v", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSnapshot: a Cluster and a Store carry on from what they wrote.
func TestSnapshot(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	c.Step(time.Now().Add(2*time.Second), time.Second)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	d := sim.NewCluster()
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	if a, b := status(t, c), status(t, d); a.UID != b.UID || len(b.History) != 1 || a.SpecHash != b.SpecHash {
		t.Errorf("restored %+v, want %+v", b, a)
	}
	st := sim.NewStore()
	if err := st.Put(t.Context(), "k", spoke.Applied{Generation: 3}); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	st2 := sim.NewStore()
	if err := json.Unmarshal(b, st2); err != nil {
		t.Fatal(err)
	}
	if a, ok, _ := st2.Get(t.Context(), "k"); !ok || a.Generation != 3 {
		t.Errorf("restored store: %+v %v", a, ok)
	}
}

func asPermanent(err error, target **spoke.PermanentError) bool { return errors.As(err, target) }

// TestDeploymentsWithoutGaps feeds the simulated statuses to the agent's
// deployment recorder: every sync is a record, and none is a gap (history
// ids start where Argo CD's do).
func TestDeploymentsWithoutGaps(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	var mark spoke.DeployMark
	seen, records := false, 0
	observe := func() {
		t.Helper()
		recs, gaps, next := spoke.Deployments("c1", status(t, c), mark, seen)
		if len(gaps) > 0 {
			t.Fatalf("gaps %+v", gaps)
		}
		records += len(recs)
		mark, seen = next, true
	}
	apply(t, c, 1, "v1")
	observe()
	for i, rev := range []string{"v1", "v2", "v3"} {
		if i > 0 {
			apply(t, c, int64(i+1), rev)
			observe()
		}
		c.Step(time.Now().Add(time.Duration(2*(i+1))*time.Second), time.Second)
		observe()
	}
	if records != 3 {
		t.Errorf("%d deployment records, want 3", records)
	}
}

// TestHistoryIsBounded: like Argo CD's revisionHistoryLimit, a simulated
// Application keeps its last 10 history entries, however many syncs ran.
func TestHistoryIsBounded(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	now := time.Now()
	for i := range 15 {
		apply(t, c, int64(i+1), "v"+string(rune('a'+i)))
		now = now.Add(2 * time.Second)
		c.Step(now, time.Second)
	}
	s := status(t, c)
	if len(s.History) != 10 || s.History[0].ID != 5 || s.History[9].ID != 14 {
		t.Errorf("history %d entries, ids %d to %d; want the last 10, 5 to 14", len(s.History), s.History[0].ID, s.History[len(s.History)-1].ID)
	}
}

// TestProjects: like Argo CD, the simulated one refuses an Application
// whose AppProject it does not have, or whose project does not permit its
// repository or destination, and keeps nothing of it. The project
// "default" is there, permitting everything, until the hub applies its
// own.
func TestProjects(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	app := func(name, project, repo, ns string) *spoke.Object {
		return &spoke.Object{Ref: spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: name}, Generation: 1,
			Spec: json.RawMessage(`{"project":"` + project + `","source":{"repoURL":"` + repo + `","targetRevision":"v1"},` +
				`"destination":{"server":"https://kubernetes.default.svc","namespace":"` + ns + `"}}`)}
	}
	project := func(name, spec string) {
		t.Helper()
		p := &spoke.Object{Ref: spoke.Ref{Kind: spoke.KindAppProject, Namespace: "argocd", Name: name}, Spec: json.RawMessage(spec), Generation: 1}
		if err := c.Apply(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	const repo = "https://git.example.com/web.git"
	project("team", `{"sourceRepos":["https://git.example.com/*"],"destinations":[{"server":"https://kubernetes.default.svc","namespace":"web"}]}`)
	for _, tc := range []struct {
		name string
		obj  *spoke.Object
		want string // what the refusal names; "" for applied
	}{
		{"in the default project", app("a", "default", "https://elsewhere.example/x.git", "anywhere"), ""},
		{"in a project of the cluster", app("b", "team", repo, "web"), ""},
		{"in a project the cluster does not have", app("c", "nosuch", repo, "web"), `spec.project: AppProject "nosuch" does not exist`},
		{"from a repository its project does not permit", app("d", "team", "https://elsewhere.example/x.git", "web"), "spec.source.repoURL"},
		{"to a namespace its project does not permit", app("e", "team", repo, "db"), "spec.destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Apply(t.Context(), tc.obj)
			_, exists := c.Status(tc.obj.Ref)
			if tc.want == "" {
				if err != nil || !exists {
					t.Errorf("refused: %v (kept: %v)", err, exists)
				}
				return
			}
			var perm *spoke.PermanentError
			if !asPermanent(err, &perm) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a permanent refusal naming %q", err, tc.want)
			}
			if exists {
				t.Error("the refused Application was kept")
			}
		})
	}
	project("default", `{"sourceRepos":["https://git.example.com/*"],"destinations":[{"server":"*","namespace":"*"}]}`)
	if err := c.Apply(t.Context(), app("f", "default", "https://elsewhere.example/x.git", "web")); err == nil {
		t.Error("the hub's own default project does not rule")
	}
}

// TestAnswerDiff: a simulated cluster answers a diff question with each
// managed resource of its tree (none of the children), unmodified, and
// says not_found for an Application it does not run.
func TestAnswerDiff(t *testing.T) {
	c := sim.NewCluster(sim.WithBehaviour(fixed(0, 0)), sim.WithSeed(1))
	apply(t, c, 1, "v1")
	raw, _, err := c.Answer(t.Context(), &schemas.QueryRequested{Resource: schemas.Resource{Namespace: "argocd", Name: "web"}, Query: schemas.QueryDiff})
	if err != nil {
		t.Fatal(err)
	}
	var d schemas.ApplicationDiff
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range d.Items {
		kinds = append(kinds, it.Kind)
		if it.Modified || it.TargetState == "" || it.TargetState != it.NormalizedLiveState {
			t.Errorf("simulated %s: %+v, want unmodified as applied", it.Kind, it)
		}
	}
	if len(kinds) < 2 || kinds[0] != "Deployment" || slices.Contains(kinds, "Pod") || slices.Contains(kinds, "ReplicaSet") {
		t.Errorf("diff of kinds %v, want the managed resources only", kinds)
	}
	_, _, err = c.Answer(t.Context(), &schemas.QueryRequested{Resource: schemas.Resource{Namespace: "argocd", Name: "nope"}, Query: schemas.QueryDiff})
	var coded interface{ QueryCode() string }
	if !errors.As(err, &coded) || coded.QueryCode() != schemas.QueryNotFound {
		t.Errorf("diff of an unknown application: %v, want not_found", err)
	}
}
