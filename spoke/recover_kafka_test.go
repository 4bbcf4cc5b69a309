//go:build integration

package spoke_test

import (
	"maps"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// TestAgentRecoversLostConfigRecords deletes config records an agent had
// not read yet (as retention or a truncation would): a new generation of
// one Application, the deletion of another and a third one created. The
// agent recovers all three from the compacted desired-state topic when it
// starts, by itself.
func TestAgentRecoversLostConfigRecords(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	a := f.agent("lossy")
	topic := f.topics[events.TopicConfig]
	txn, err := kgo.NewClient(append(events.ProducerOpts(nil), kgo.SeedBrokers(kafkatest.Bootstrap(t)),
		kgo.TransactionalID("txn.lossy."+topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	w, err := events.NewConfigWriter(txn, f.hub, f.topics)
	if err != nil {
		t.Fatal(err)
	}
	write := func(es ...*event.Event) {
		t.Helper()
		if _, err := w.Write(t.Context(), es...); err != nil {
			t.Fatal(err)
		}
	}
	write(f.upsert(a.cluster, "web", 1), f.upsert(a.cluster, "old", 1))
	stop := a.start(t)
	waitApplied(t, a, "argocd/web")
	waitApplied(t, a, "argocd/old")
	stop()

	res := schemas.Resource{Cluster: a.cluster, Namespace: "argocd", Name: "old", Generation: 2}
	del, err := events.New("//argosy.dev/hub/test", events.TypeApplicationDeleted,
		events.Subject{Cluster: a.cluster, Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "old"}.String(), a.cluster,
		schemas.ApplicationDeleted{Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	write(f.upsert(a.cluster, "web", 2), del, f.upsert(a.cluster, "new", 1))
	adm := kadm.NewClient(f.client)
	part := events.NewPartitioner(nil).PartitionOf(a.cluster, 2)
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, part)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: end.Offset})
	deleted, err := adm.DeleteRecords(t.Context(), offs)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatal(err)
	}

	defer a.start(t)()
	want := map[string]int64{"argocd/web": 2, "argocd/new": 1}
	for deadline := time.Now().Add(time.Minute); !maps.Equal(a.argo.snapshot(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the loss the agent holds %v, want %v", a.argo.snapshot(), want)
		}
	}
}
