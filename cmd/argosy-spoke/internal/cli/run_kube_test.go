//go:build integration

package cli_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(kafkatest.RunFunc(func() int { return kubetest.Main(m) })))
}

// spokeRig is a hub's producer, a built argosy-spoke binary, its keys and
// topics, and a real Argo CD to apply to.
type spokeRig struct {
	t       testing.TB
	e       *kubetest.Env
	dir     string
	bin     string
	ns      string
	cluster string
	prefix  string
	topics  events.Topics
	keys    spoke.Keys
	hubPub  ed25519.PublicKey
	prod    *events.Producer
	repo    *kubetest.Repo
	apps    dynamic.ResourceInterface
	// broker is the bootstrap address; client makes clients of it.
	broker string
	client func(opts ...kgo.Opt) *kgo.Client
	// env is added to the spoke's environment.
	env []string
	// heartbeat is the spoke's --heartbeat-interval (1s in tests).
	heartbeat string
	// leaseTiming is the spokes' Lease timing (rigLease unless set).
	leaseTiming kube.LeaseTiming
	// syncPolicy, when set, is the Applications' spec.syncPolicy.
	syncPolicy map[string]any
	// readyz is the /readyz address of the spoke started last.
	readyz string
}

// newSpokeRig is a rig whose argosy-spoke is built with tags (such as
// argosy_testhooks, for the fault hooks).
func newSpokeRig(t testing.TB, tags ...string) *spokeRig {
	return newSpokeRigOn(t, kafkatest.Bootstrap(t), func(opts ...kgo.Opt) *kgo.Client { return kafkatest.Client(t, opts...) }, tags...)
}

// newSpokeRigOn is a rig on the broker at addr.
func newSpokeRigOn(t testing.TB, addr string, client func(opts ...kgo.Opt) *kgo.Client, tags ...string) *spokeRig {
	e := kubetest.Current(t)
	ctx := t.Context()
	if err := e.StartArgoCD(ctx); err != nil {
		t.Fatal(err)
	}
	r := &spokeRig{t: t, e: e, dir: t.TempDir(), ns: e.Namespace(t), prefix: kafkatest.Prefix(t), broker: addr, client: client, heartbeat: "1s",
		leaseTiming: rigLease}
	r.cluster, r.topics, r.bin = "spoke-"+r.ns, events.DefaultTopics(r.prefix), filepath.Join(r.dir, "argosy-spoke")
	buildSpoke(t, r.bin, tags...)
	if err := events.EnsureTopics(ctx, kadm.NewClient(client()), r.topics, events.TopicPlan(4, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.keys, err = spoke.GenerateKeys(); err != nil {
		t.Fatal(err)
	}
	if err := spoke.WriteKeys(filepath.Join(r.dir, "keys"), r.cluster, r.keys); err != nil {
		t.Fatal(err)
	}
	_, hubPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r.hubPub = hubPriv.Public().(ed25519.PublicKey)
	if err := os.WriteFile(filepath.Join(r.dir, "hub.pub"), []byte(base64.StdEncoding.EncodeToString(r.hubPub)), 0o644); err != nil {
		t.Fatal(err)
	}
	hub, err := events.NewSigner(hubPriv)
	if err != nil {
		t.Fatal(err)
	}
	if r.prod, err = events.NewProducer(client(events.ProducerOpts(nil)...), hub, r.topics); err != nil {
		t.Fatal(err)
	}
	r.repo = kubetest.NewRepo(t)
	r.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	r.apps = dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	return r
}

// buildSpoke builds argosy-spoke into bin with tags.
func buildSpoke(t testing.TB, bin string, tags ...string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "github.com/argosyproj/argosy/cmd/argosy-spoke")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
}

// upserts publishes generation gen of the named Applications.
func (r *spokeRig) upserts(gen int64, names ...string) []*event.Event {
	es, err := r.publishUpserts(gen, names...)
	if err != nil {
		r.t.Fatal(err)
	}
	return es
}

// publishUpserts is upserts for goroutines other than the test's.
func (r *spokeRig) publishUpserts(gen int64, names ...string) ([]*event.Event, error) {
	s := map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": r.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": r.ns}}
	if r.syncPolicy != nil {
		s["syncPolicy"] = r.syncPolicy
	}
	spec, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var es []*event.Event
	for _, name := range names {
		res := schemas.Resource{Cluster: r.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: gen}
		ev, err := events.New("//argosy.dev/hub/test", events.TypeApplicationUpserted,
			events.Subject{Cluster: r.cluster, Kind: "applications", Namespace: kubetest.ArgoNamespace, Name: name}.String(), r.cluster,
			schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
		if err != nil {
			return nil, err
		}
		es = append(es, ev)
	}
	if _, err := r.prod.Publish(r.t.Context(), es...); err != nil {
		return nil, err
	}
	return es, nil
}

// rigLease is the Lease timing of the rig's spokes: short, so that a spoke
// restarted after a SIGKILL waits little for its predecessor's Lease.
var rigLease = kube.LeaseTiming{Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}

// lease is the name of the rig's Lease, one per rig: the tests share the
// Argo CD namespace.
func (r *spokeRig) lease() string { return "argosy-spoke-" + r.ns }

func (r *spokeRig) start() *testproc.Proc { return r.startNamed("argosy-spoke") }

// startNamed starts a spoke whose log is name's, beside others.
func (r *spokeRig) startNamed(name string) *testproc.Proc {
	ports, err := testproc.FreePorts(1)
	if err != nil {
		r.t.Fatal(err)
	}
	p, err := testproc.Start(r.dir, name, r.bin, []string{"run",
		"--cluster", r.cluster, "--kafka-brokers", r.broker, "--topic-prefix", r.prefix,
		"--kubeconfig", r.e.Kubeconfig, "--keys-dir", filepath.Join(r.dir, "keys"), "--hub-key", filepath.Join(r.dir, "hub.pub"),
		"--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--heartbeat-interval", r.heartbeat, "--argocd-version", "v2.14.21",
		"--namespace", r.ns, "--lease", r.lease(), "--lease-duration", r.leaseTiming.Duration.String(),
		"--lease-renew-deadline", r.leaseTiming.RenewDeadline.String(), "--lease-retry-period", r.leaseTiming.RetryPeriod.String()}, r.env)
	if err != nil {
		r.t.Fatal(err)
	}
	r.readyz = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0])
	return p
}

// waitGeneration waits until the Application name carries generation want.
func (r *spokeRig) waitGeneration(p *testproc.Proc, name, want string) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		a, err := r.apps.Get(r.t.Context(), name, metav1.GetOptions{})
		if err == nil && a.GetAnnotations()[argocd.AnnotationGeneration] == want {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("generation %s of %s never applied; spoke log:\n%s", want, name, p.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSpokeProcessSurvivesSIGKILL runs the real argosy-spoke binary against
// the real broker and Argo CD, kills it with SIGKILL, changes the desired
// state while it is down, and checks that the restarted spoke applies the
// change exactly once.
func TestSpokeProcessSurvivesSIGKILL(t *testing.T) {
	r := newSpokeRig(t)
	ctx := t.Context()
	cluster, topics, keys, hubPub := r.cluster, r.topics, r.keys, r.hubPub
	name := "guestbook-" + r.ns
	up1 := r.upserts(1, name)[0]
	p := r.start()
	r.waitGeneration(p, name, "1")
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(0); err != nil {
		t.Fatal(err)
	}
	up2 := r.upserts(2, name)[0] // while the spoke is down
	p = r.start()
	r.waitGeneration(p, name, "2")

	// Acknowledgements: each upsert applied, none rejected. (The apply
	// comes before the acknowledgement, so wait for it before stopping.)
	reg := events.NewRegistry(events.HubAnchor("hub", hubPub), events.Key{ID: events.KeyID(keys.Signing.Public().(ed25519.PublicKey)),
		Owner: cluster, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: keys.Signing.Public().(ed25519.PublicKey)})
	dec, err := events.NewDecoder(events.NewVerifier(reg))
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, kgo.ConsumeTopics(topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	acks := map[string][]string{}
	var beat *schemas.Heartbeat
	pollCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for len(acks[up1.ID()]) == 0 || len(acks[up2.ID()]) == 0 || beat == nil || beat.Applications == 0 {
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("acknowledgements %v", acks)
		}
		for _, r := range fs.Records() {
			d, err := dec.Decode(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			switch a := d.Data.(type) {
			case *schemas.ConfigApplied:
				acks[a.EventID] = append(acks[a.EventID], "applied")
			case *schemas.ConfigRejected:
				acks[a.EventID] = append(acks[a.EventID], a.Code)
			case *schemas.Heartbeat:
				beat = a
			}
		}
	}
	if err := p.Terminate(30 * time.Second); err != nil { // graceful: SIGTERM
		t.Fatalf("%v; log:\n%s", err, p.LogTail())
	}
	if beat.Mode != "managed" || beat.ConfigOffset < 1 || beat.Cluster != cluster || beat.ArgoCDVersion != "v2.14.21" {
		t.Errorf("heartbeat %+v", beat)
	}
	for _, id := range []string{up1.ID(), up2.ID()} {
		for _, a := range acks[id] {
			if a != "applied" {
				t.Errorf("event %s acknowledged %v, want only applied", id, acks[id])
			}
		}
	}
}
