//go:build integration

package projector_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	projectorcmd "github.com/argosyproj/argosy/cmd/argosy/internal/projector"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/pgtest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(kafkatest.RunFunc(func() int { return pgtest.Main(m) })))
}

// fleet is a hub and a few clusters appending a realistic log: config
// changes, acknowledgements, status deltas, heartbeats, deployment records,
// API calls, and some bad records.
type fleet struct {
	t        *testing.T
	topics   events.Topics
	prefix   string
	hubPub   ed25519.PublicKey
	hub      *events.Producer
	clusters []string
	spokes   map[string]*events.Producer
	signers  map[string]*events.Signer
	raw      *kgo.Client
	reg      *events.Registry
	gen      map[string]int64
	seq      map[string]int64
	rng      *rand.Rand
}

func newFleet(t *testing.T, clusters ...string) *fleet {
	ctx := t.Context()
	f := &fleet{t: t, prefix: kafkatest.Prefix(t), clusters: clusters, spokes: map[string]*events.Producer{}, signers: map[string]*events.Signer{},
		gen: map[string]int64{}, seq: map[string]int64{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))}
	f.topics = events.DefaultTopics(f.prefix)
	if err := events.EnsureTopics(ctx, kadm.NewClient(kafkatest.Client(t)), f.topics, events.TopicPlan(4, 3), 1, 1); err != nil {
		t.Fatal(err)
	}
	f.raw = kafkatest.Client(t, events.ProducerOpts(nil)...)
	hubSigner, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	f.hubPub = hubSigner.Public()
	if f.hub, err = events.NewProducer(f.raw, hubSigner, f.topics); err != nil {
		t.Fatal(err)
	}
	f.reg = events.NewRegistry(events.HubAnchor("hub", f.hubPub))
	var keyEvents []*event.Event
	for _, c := range clusters {
		s, err := events.GenerateSigner()
		if err != nil {
			t.Fatal(err)
		}
		f.signers[c] = s
		if f.spokes[c], err = events.NewProducer(f.raw, s, f.topics); err != nil {
			t.Fatal(err)
		}
		kr := schemas.KeyRegistered{KeyID: events.KeyID(s.Public()), Owner: c, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())}
		keyEvents = append(keyEvents, f.event("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+kr.KeyID, c, kr))
	}
	if err := f.publish(f.hub, keyEvents...); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) event(source, typ, subject, key string, data any) *event.Event {
	e, err := events.New(source, typ, subject, key, data)
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fleet) publish(p *events.Producer, es ...*event.Event) error {
	_, err := p.Publish(f.t.Context(), es...)
	return err
}

// step appends one round of activity: each cluster gets a change to one of
// its Applications, acknowledges it, reports status and a heartbeat, and
// sometimes records a deployment; the hub audits the call. Now and then a
// forged record is appended too.
func (f *fleet) step(i int) error {
	for _, c := range f.clusters {
		name := fmt.Sprintf("app-%d", f.rng.IntN(4))
		key := c + "/" + name
		f.gen[key]++
		f.seq[key]++
		gen, seq := f.gen[key], f.seq[key]
		res := schemas.Resource{Cluster: c, Namespace: "argocd", Name: name, Generation: gen}
		subj := events.Subject{Cluster: c, Kind: "applications", Namespace: "argocd", Name: name}.String()
		spec, _ := json.Marshal(map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://git.example.com/r.git",
			"targetRevision": fmt.Sprintf("v%d", gen)}})
		up := f.event("//argosy.dev/hub/test", events.TypeApplicationUpserted, subj, c,
			schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
		call := f.event("//argosy.dev/hub/test", events.TypeAuditRecorded, events.Subject{Cluster: c}.String(), c,
			schemas.AuditRecorded{RequestID: fmt.Sprintf("%s-%d", key, gen), Actor: "alice", Action: "applications.update", Method: "PUT",
				Path: "/api/v1/x", Cluster: c, Outcome: "allowed", StatusCode: 200, EventIDs: []string{up.ID()}})
		if err := f.publish(f.hub, up, call); err != nil {
			return err
		}
		src := "//argosy.dev/spoke/" + c
		out := []*event.Event{
			f.event(src, events.TypeConfigApplied, subj, c, schemas.ConfigApplied{Resource: res, EventID: up.ID()}),
			f.event(src, events.TypeApplicationStatus, subj, c, schemas.ApplicationStatusChanged{Resource: res, Seq: seq, Full: seq == 1,
				Sync: &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("r%d", gen)}, Health: &schemas.HealthStatus{Status: "Healthy"}}),
			f.event(src, events.TypeHeartbeat, events.Subject{Cluster: c}.String(), c,
				schemas.Heartbeat{Cluster: c, AgentVersion: "v1", Mode: "managed", Seq: int64(i), Applications: 4}),
		}
		if gen%2 == 0 {
			hid := gen
			out = append(out, f.event(src, events.TypeDeploymentRecorded, subj, c, schemas.DeploymentRecorded{Resource: res,
				DeploymentID: fmt.Sprintf("%s/%d", key, gen), Revision: fmt.Sprintf("r%d", gen), Phase: "Succeeded", Project: "default",
				StartedAt: time.Now().Add(-time.Minute).UTC(), FinishedAt: time.Now().UTC(), HistoryID: &hid}))
		}
		if err := f.publish(f.spokes[c], out...); err != nil {
			return err
		}
	}
	if i%10 == 0 { // bad input: a status event signed by another cluster's key
		c, other := f.clusters[0], f.clusters[1]
		forged := f.event("//argosy.dev/spoke/"+c, events.TypeHeartbeat, events.Subject{Cluster: c}.String(), c,
			schemas.Heartbeat{Cluster: c, AgentVersion: "evil", Mode: "managed", Seq: 1})
		if err := f.publish(f.spokes[other], forged); err != nil {
			return err
		}
	}
	return nil
}

// load appends steps rounds of activity, 50 ms apart, and then sends the
// first error (or nil) on the channel it returns.
func (f *fleet) load(steps int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := range steps {
			if err := f.step(i); err != nil {
				done <- err
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		done <- nil
	}()
	return done
}

// foldLog reads the four folded topics up to their ends and folds them: the
// views a correct projector holds once it has read as far.
func (f *fleet) foldLog() (*projector.Batch, map[projector.Partition]int64) {
	f.t.Helper()
	ctx := f.t.Context()
	reg := events.NewRegistry(append(f.reg.Keys(), f.clusterKeys()...)...)
	dec, err := events.NewDecoder(events.NewVerifier(reg), events.WithTopics(f.topics))
	if err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, t := range []events.Topic{events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit} {
		names = append(names, f.topics[t])
	}
	ends, err := kadm.NewClient(kafkatest.Client(f.t)).ListEndOffsets(ctx, names...)
	if err != nil {
		f.t.Fatal(err)
	}
	want := map[projector.Partition]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[projector.Partition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	})
	cl := kafkatest.Client(f.t, kgo.ConsumeTopics(names...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[projector.Partition]int64{}
	var ds []*events.Decoded
	pollCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for !reached(got, want) {
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			f.t.Fatalf("log read to %v, want %v", got, want)
		}
		for _, r := range fs.Records() {
			got[projector.Partition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
			if d, err := dec.Decode(ctx, r); err == nil {
				ds = append(ds, d)
			}
		}
	}
	b, err := projector.FoldAll(ds)
	if err != nil {
		f.t.Fatal(err)
	}
	return b, want
}

func reached(got, want map[projector.Partition]int64) bool {
	for p, w := range want {
		if got[p] < w {
			return false
		}
	}
	return true
}

func (f *fleet) clusterKeys() []events.Key {
	var keys []events.Key
	for c, s := range f.signers {
		pub := s.Public()
		keys = append(keys, events.Key{ID: events.KeyID(pub), Owner: c, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", Public: pub})
	}
	return keys
}

// waitCaughtUp waits until the store's offsets reach want.
func waitCaughtUp(t *testing.T, store *sqlstore.Store, want map[projector.Partition]int64, tail func() string) {
	t.Helper()
	var ps []projector.Partition
	for p := range want {
		ps = append(ps, p)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got, err := store.Offsets(t.Context(), ps)
		if err == nil && reached(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the projector's offsets %v never reached %v (%v); log:\n%s", got, want, err, tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compareViews checks the store holds exactly what folding the log gives.
func compareViews(t *testing.T, store *sqlstore.Store, want *projector.Batch) {
	t.Helper()
	ctx := t.Context()
	opts := []cmp.Option{cmpopts.EquateEmpty()}
	apps, err := store.Apps(ctx, projector.AppFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var desired []projector.AppDesired
	var observed []projector.AppObserved
	for _, a := range apps {
		if a.Desired != nil {
			desired = append(desired, *a.Desired)
		}
		if a.Observed != nil {
			observed = append(observed, *a.Observed)
		}
	}
	byKey := func(k projector.AppKey) string { return k.Cluster + "/" + k.Namespace + "/" + k.Name }
	slices.SortFunc(want.Desired, func(a, b projector.AppDesired) int { return strings.Compare(byKey(a.AppKey), byKey(b.AppKey)) })
	slices.SortFunc(want.Observed, func(a, b projector.AppObserved) int { return strings.Compare(byKey(a.AppKey), byKey(b.AppKey)) })
	if diff := cmp.Diff(want.Desired, desired, opts...); diff != "" {
		t.Errorf("desired Applications differ from a fold of the log (-fold +store):\n%s", diff)
	}
	if diff := cmp.Diff(want.Observed, observed, opts...); diff != "" {
		t.Errorf("observed Applications differ from a fold of the log (-fold +store):\n%s", diff)
	}
	chains := map[projector.Partition][]projector.AuditEntry{}
	for _, e := range want.Audit {
		p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
		chains[p] = append(chains[p], e)
	}
	for p, es := range chains {
		got, err := store.Chain(ctx, p, -1, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(es, got, opts...); diff != "" {
			t.Errorf("audit chain of %v differs from a fold of the log (-fold +store):\n%s", p, diff)
		}
		if br := projector.Verify(got); br != nil {
			t.Errorf("stored chain of %v breaks: %+v", p, br)
		}
	}
	deps, err := store.Deployments(ctx, projector.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != len(want.Deployments) {
		t.Errorf("%d deployment records stored, a fold of the log has %d", len(deps), len(want.Deployments))
	}
	clusters, err := store.Clusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var beats []projector.ClusterBeat
	for _, c := range clusters {
		if c.Beat != nil {
			beats = append(beats, *c.Beat)
		}
	}
	slices.SortFunc(want.Beats, func(a, b projector.ClusterBeat) int { return strings.Compare(a.Cluster, b.Cluster) })
	if diff := cmp.Diff(want.Beats, beats, opts...); diff != "" {
		t.Errorf("heartbeats differ from a fold of the log (-fold +store):\n%s", diff)
	}
}

// projectorProc runs the real argosy projector.
type projectorProc struct {
	t     *testing.T
	bin   string
	dir   string
	f     *fleet
	store string
	group string
	// metrics is the /metrics URL of the process started last.
	metrics string
	// args are more flags (--listen and --tokens, say).
	args []string
}

// buildArgosy builds the argosy binary with tags (such as
// argosy_testhooks, for the fault hooks) and returns its path.
func buildArgosy(t *testing.T, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "argosy")
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "github.com/argosyproj/argosy/cmd/argosy")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func (p *projectorProc) start(env ...string) *testproc.Proc {
	p.t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		p.t.Fatal(err)
	}
	p.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	hubKey := filepath.Join(p.dir, "hub.pub")
	if err := os.WriteFile(hubKey, []byte(base64.StdEncoding.EncodeToString(p.f.hubPub)), 0o644); err != nil {
		p.t.Fatal(err)
	}
	proc, err := testproc.Start(p.dir, "argosy-projector", p.bin, append([]string{"projector",
		"--kafka-brokers", kafkatest.Bootstrap(p.t), "--topic-prefix", p.f.prefix, "--store", p.store, "--group", p.group,
		"--hub-key", hubKey, "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--max-records", "200"}, p.args...), env)
	if err != nil {
		p.t.Fatal(err)
	}
	return proc
}

// TestProjectorSurvivesKills folds a fleet's log with the real binary while
// it is SIGKILLed again and again, on each store: right before and right
// after a store commit, then at random moments. Once it has caught up, its
// views equal a fold of the whole log, chains and all, and a rebuild of
// the log with `argosy replay rebuild`, row by row.
func TestProjectorSurvivesKills(t *testing.T) {
	bin := buildArgosy(t, "argosy_testhooks")
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "views.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Database(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, "c1", "c2", "c3")
			p := &projectorProc{t: t, bin: bin, dir: t.TempDir(), f: f, store: tc.store(t), group: "projector." + f.prefix}
			load := f.load(40)
			kills := 0
			for _, crash := range []string{"before:3", "after:3"} {
				proc := p.start(projectorcmd.EnvCrashAtCommit + "=" + crash)
				waitExited(t, proc)
				kills++
			}
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
			for range 2 {
				proc := p.start()
				time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
				if exited, err := proc.Exited(); exited {
					t.Fatalf("the projector exited by itself (%v); log:\n%s", err, proc.LogTail())
				}
				if err := syscall.Kill(proc.Pid(), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				waitExited(t, proc)
				kills++
			}
			if err := <-load; err != nil {
				t.Fatal(err)
			}
			proc := p.start()
			defer func() {
				if err := proc.Terminate(30 * time.Second); err != nil {
					t.Errorf("%v; log:\n%s", err, proc.LogTail())
				}
			}()
			want, ends := f.foldLog()
			store := openForTest(t, p.store)
			waitCaughtUp(t, store, ends, proc.LogTail)
			compareViews(t, store, want)
			replayMatches(t, p)
			t.Logf("%d kills; %d audit entries, %d deployments, %d Applications", kills, len(want.Audit), len(want.Deployments), len(want.Desired))
		})
	}
}

func waitExited(t *testing.T, p *testproc.Proc) {
	t.Helper()
	if exited, _ := p.WaitExit(2 * time.Minute); !exited {
		t.Fatalf("the projector did not exit; log:\n%s", p.LogTail())
	}
	if err := p.Stop(0); err != nil {
		t.Logf("stop: %v", err) // killed: a non-zero exit is expected
	}
}

func openForTest(t *testing.T, url string) *sqlstore.Store {
	t.Helper()
	var s *sqlstore.Store
	var err error
	if path, ok := strings.CutPrefix(url, "sqlite://"); ok {
		s, err = sqlstore.OpenSQLite(t.Context(), path)
	} else {
		s, err = sqlstore.OpenPostgres(t.Context(), url)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestProjectorReplicasRebalance runs two projector replicas over one
// PostgreSQL in one consumer group while the log grows: the second joins
// (a rebalance), then the first stops (another). Once the survivor has
// caught up, the views equal a fold of the whole log: the rebalances lost
// and duplicated nothing; and a rebuild into SQLite matches them row by
// row.
func TestProjectorReplicasRebalance(t *testing.T) {
	bin := buildArgosy(t)
	f := newFleet(t, "c1", "c2", "c3", "c4")
	p := &projectorProc{t: t, bin: bin, dir: t.TempDir(), f: f, store: pgtest.Database(t), group: "projector." + f.prefix}
	load := f.load(40)
	a := p.start()
	time.Sleep(3 * time.Second)
	bDir := t.TempDir() // the second replica's log apart from the first's
	pb := *p
	pb.dir = bDir
	b := pb.start()
	defer func() {
		if err := b.Terminate(30 * time.Second); err != nil {
			t.Errorf("%v; log:\n%s", err, b.LogTail())
		}
	}()
	time.Sleep(4 * time.Second)
	if err := a.Terminate(30 * time.Second); err != nil { // graceful: it leaves the group
		t.Fatalf("%v; log:\n%s", err, a.LogTail())
	}
	if err := <-load; err != nil {
		t.Fatal(err)
	}
	// The log grows after the first replica left, so that the survivor
	// folds some of it whenever the first read the rest: its metrics then
	// have samples.
	if err := <-f.load(5); err != nil {
		t.Fatal(err)
	}
	want, ends := f.foldLog()
	store := openForTest(t, p.store)
	waitCaughtUp(t, store, ends, b.LogTail)
	compareViews(t, store, want)
	replayMatches(t, p)
	// Not argosy_events_dead_lettered_total: the forged records may all
	// have been read by the replica that left, and a labelled counter has
	// no series before its first count.
	checkMetrics(t, pb.metrics, "argosy_projector_folded_total{", "argosy_projector_steps_total{",
		"argosy_projector_step_duration_seconds_bucket{", "argosy_projector_lag{")
}

// checkMetrics checks that the Prometheus text at url has a sample of each
// of the series named.
func checkMetrics(t *testing.T, url string, series ...string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		if !strings.Contains(string(body), "\n"+s) {
			t.Errorf("%s has no %s… sample", url, s)
		}
	}
}
