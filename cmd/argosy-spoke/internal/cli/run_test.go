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
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkatest"
	"github.com/argosyproj/argosy/internal/kubetest"
	"github.com/argosyproj/argosy/internal/testproc"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(kafkatest.RunFunc(func() int { return kubetest.Main(m) })))
}

// TestSpokeProcessSurvivesSIGKILL runs the real argosy-spoke binary against
// the real broker and Argo CD, kills it with SIGKILL, changes the desired
// state while it is down, and checks that the restarted spoke applies the
// change exactly once.
func TestSpokeProcessSurvivesSIGKILL(t *testing.T) {
	e := kubetest.Current(t)
	ctx := t.Context()
	if err := e.StartArgoCD(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "argosy-spoke")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/argosyproj/argosy/cmd/argosy-spoke").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ns := e.Namespace(t)
	cluster := "spoke-" + ns
	prefix := kafkatest.Prefix(t)
	topics := events.DefaultTopics(prefix)
	if err := events.EnsureTopics(ctx, kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(4, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := spoke.WriteKeys(filepath.Join(dir, "keys"), cluster, keys); err != nil {
		t.Fatal(err)
	}
	_, hubPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hubPub := hubPriv.Public().(ed25519.PublicKey)
	if err := os.WriteFile(filepath.Join(dir, "hub.pub"), []byte(base64.StdEncoding.EncodeToString(hubPub)), 0o644); err != nil {
		t.Fatal(err)
	}
	hub, err := events.NewSigner(hubPriv)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(nil)...), hub, topics)
	if err != nil {
		t.Fatal(err)
	}
	repo := kubetest.NewRepo(t)
	repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + ns
	upsert := func(gen int64) *event.Event {
		spec, _ := json.Marshal(map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": repo.URL, "path": "app", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}})
		res := schemas.Resource{Cluster: cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: gen}
		ev, err := events.New("//argosy.dev/hub/test", events.TypeApplicationUpserted,
			events.Subject{Cluster: cluster, Kind: "applications", Namespace: kubetest.ArgoNamespace, Name: name}.String(), cluster,
			schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prod.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	start := func() *testproc.Proc {
		ports, err := testproc.FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := testproc.Start(dir, "argosy-spoke", bin, []string{"run",
			"--cluster", cluster, "--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", prefix,
			"--kubeconfig", e.Kubeconfig, "--keys-dir", filepath.Join(dir, "keys"), "--hub-key", filepath.Join(dir, "hub.pub"),
			"--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--heartbeat-interval", "1s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	waitGeneration := func(p *testproc.Proc, want string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			a, err := apps.Get(ctx, name, metav1.GetOptions{})
			if err == nil && a.GetAnnotations()[kube.AnnotationGeneration] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("generation %s never applied; spoke log:\n%s", want, p.LogTail())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	up1 := upsert(1)
	p := start()
	waitGeneration(p, "1")
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(0); err != nil {
		t.Fatal(err)
	}
	up2 := upsert(2) // while the spoke is down
	p = start()
	waitGeneration(p, "2")

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
	if err := p.Stop(10 * time.Second); err != nil { // graceful: SIGTERM
		t.Fatal(err)
	}
	if beat.Mode != "managed" || beat.ConfigOffset < 1 || beat.Cluster != cluster {
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
