//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestBootstrap writes a long config history for one cluster (and another
// cluster sharing its partition) through the hub's transactional
// ConfigWriter, then starts a brand-new spoke. The spoke must reach the
// final desired state by applying each object once, from the desired-state
// topic, acknowledge nothing of the superseded history, and then go on with
// the config topic from where the snapshot ends.
func TestBootstrap(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	writer, err := events.NewConfigWriter(kafkatest.Client(t, append(events.ProducerOpts(nil),
		kgo.TransactionalID("hub-"+w.ns))...), w.hubKey, w.topics)
	if err != nil {
		t.Fatal(err)
	}
	const objects, generations = 5, 200
	app := func(cluster string, i int, gen int64) *event.Event {
		spec, _ := json.Marshal(map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "v" + strconv.FormatInt(gen, 10)},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}})
		res := schemas.Resource{Cluster: cluster, Namespace: kubetest.ArgoNamespace, Name: fmt.Sprintf("boot-%d-%s", i, w.ns), Generation: gen}
		e, err := events.New("//argosy.dev/hub/test", events.TypeApplicationUpserted,
			events.Subject{Cluster: cluster, Kind: "applications", Namespace: res.Namespace, Name: res.Name}.String(), cluster,
			schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	other := otherClusterOnPartition(w.cluster)
	written := 0
	for gen := int64(1); gen <= generations; gen++ {
		var batch []*event.Event
		for i := range objects {
			batch = append(batch, app(w.cluster, i, gen), app(other, i, gen))
		}
		if _, err := writer.Write(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		written += len(batch)
	}
	// The last object is deleted: it must not come back.
	gone := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: fmt.Sprintf("boot-%d-%s", objects-1, w.ns), Generation: generations + 1}
	if _, err := writer.Write(ctx, w.event(events.TypeApplicationDeleted, gone, schemas.ApplicationDeleted{Resource: gone})); err != nil {
		t.Fatal(err)
	}

	// A new spoke: no state, no checkpoint.
	dec, err := events.NewDecoder(events.NewVerifier(w.reg), events.WithTarget(w.cluster), events.WithTopics(w.topics))
	if err != nil {
		t.Fatal(err)
	}
	group := "spoke." + w.cluster
	part := events.NewPartitioner(nil).PartitionOf(w.cluster, partitions)
	newBootstrap := func(group string, state spoke.StateStore) *spoke.Bootstrap {
		t.Helper()
		b, err := spoke.NewBootstrap(w.cluster, kafkatest.Client(t), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, part, group,
			w.intake(dec), state, w.newApplier().Handle, spoke.WithTopics(w.topics))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	boot := newBootstrap(group, w.state)
	started := time.Now()
	n, err := boot.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bootstrap: %d objects from a history of %d config events in %s", n, written+1, time.Since(started).Round(time.Millisecond))
	if n != objects-1 {
		t.Errorf("bootstrapped %d objects, want %d", n, objects-1)
	}
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	for i := range objects {
		a, err := apps.Get(ctx, fmt.Sprintf("boot-%d-%s", i, w.ns), metav1.GetOptions{})
		if i == objects-1 {
			if err == nil {
				t.Errorf("the deleted object %s is back", a.GetName())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if g := a.GetAnnotations()[argocd.AnnotationGeneration]; g != strconv.Itoa(generations) {
			t.Errorf("%s at generation %s, want %d", a.GetName(), g, generations)
		}
	}
	if again, err := boot.Run(ctx); err != nil || again != 0 {
		t.Errorf("a second bootstrap applied %d objects (%v), want none", again, err)
	}

	// The config reader takes over after the snapshot: a new change is
	// applied, and nothing of the old history is acknowledged.
	next := app(w.cluster, 0, generations+1)
	if _, err := writer.Write(ctx, next); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	// It starts where the bootstrap moved the offset in the agent's state.
	offsets := spoke.NewOffsets(w.state, kadm.NewClient(kafkatest.Client(t)), group, w.topics[events.TopicConfig], part)
	done := w.run(runCtx, "", events.WithOffsetStore(offsets))
	got := w.acks(func(last map[string]string, _ int) bool { _, ok := last[next.ID()]; return ok })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got[next.ID()] != "applied" || len(got) != objects {
		t.Errorf("acknowledgements %v: want %d (the snapshot's objects and the new change), all applied", got, objects)
	}

	t.Run("a forged offset header is not trusted", func(t *testing.T) {
		// A valid signed copy whose unsigned offset header points past
		// config events: a fresh spoke must not move its checkpoint there.
		nextRecs, err := writer.Write(ctx, app(w.cluster, 1, generations+2))
		if err != nil {
			t.Fatal(err)
		}
		cl := kafkatest.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			w.topics[events.TopicDesired]: {part: kgo.NewOffset().AtStart()}}))
		fs := cl.PollRecords(ctx, 1)
		orig := fs.Records()[0]
		forged := &kgo.Record{Topic: orig.Topic, Key: orig.Key, Value: orig.Value}
		for _, h := range orig.Headers {
			if h.Key == events.HeaderConfigOffset {
				h.Value = []byte(strconv.FormatInt(nextRecs[0].Offset+1000, 10))
			}
			forged.Headers = append(forged.Headers, h)
		}
		forged.Key = []byte(w.cluster + "/applications/argocd/forged")
		if err := kafkatest.Client(t, events.ProducerOpts(nil)...).ProduceSync(ctx, forged).FirstErr(); err != nil {
			t.Fatal(err)
		}
		state := newState(t, w.dyn, "argosy-spoke-fresh-"+w.ns)
		fresh := newBootstrap(group+".fresh", state)
		if _, err := fresh.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if o, ok, err := state.Get(ctx, spoke.ConfigOffsetKey); err != nil || ok {
			t.Errorf("checkpoint moved to %d (%v) on a forged offset", o.Offset, err)
		}
	})
}

// otherClusterOnPartition returns a cluster name whose config partition is
// the same as cluster's.
func otherClusterOnPartition(cluster string) string {
	p := events.NewPartitioner(nil)
	for i := 0; ; i++ {
		c := fmt.Sprintf("other-%d", i)
		if p.PartitionOf(c, partitions) == p.PartitionOf(cluster, partitions) {
			return c
		}
	}
}
