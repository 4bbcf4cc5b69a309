package events

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDesiredKeysShareTheClusterPartition checks that a desired-state key
// ("cluster/kind/namespace/name") lands on its cluster's partition, pinned or
// not, so a spoke reads one partition of each topic.
func TestDesiredKeysShareTheClusterPartition(t *testing.T) {
	p := NewPartitioner(map[string]int32{"pinned": 5})
	for _, cluster := range []string{"prod-eu-1", "edge-7", "pinned", "a"} {
		for _, s := range []Subject{{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "web"}, {Cluster: cluster}} {
			key := DesiredKey(s)
			if got, want := p.Partition(&kgo.Record{Key: []byte(key)}, 12), int(p.PartitionOf(cluster, 12)); got != want {
				t.Errorf("%s: partition %d, want the cluster's %d", key, got, want)
			}
		}
	}
}

// TestDesiredCopy checks which config events get a desired-state copy, and
// that a copy is the same event keyed by its object: record key,
// partitionkey and the partitionkey its signature covers agree.
func TestDesiredCopy(t *testing.T) {
	hub, err := GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	w := &ConfigWriter{p: &Producer{signer: hub, topics: Topics{TopicDesired: "desired"}}}
	verifier := NewVerifier(NewRegistry(HubAnchor("hub", hub.Public())))
	tests := []struct {
		typ, subject string
		copied       bool
	}{
		{TypeApplicationUpserted, "clusters/c1/applications/argocd/web", true},
		{TypeApplicationDeleted, "clusters/c1/applications/argocd/web", true},
		{TypeRepositoryUpserted, "clusters/c1/repositories/argocd/r", true},
		{TypeOperationRequested, "clusters/c1/applications/argocd/web", false},
		{TypeClusterRegistered, "clusters/c1", true},
		{TypeClusterDeregistered, "clusters/c1", true},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			e, err := New("//argosy.dev/hub", tc.typ, tc.subject, "c1", map[string]string{"x": "y"})
			if err != nil {
				t.Fatal(err)
			}
			if err := hub.Sign(t.Context(), e); err != nil {
				t.Fatal(err)
			}
			copies, of, err := w.copies(t.Context(), []*event.Event{e})
			if err != nil {
				t.Fatal(err)
			}
			if (len(copies) == 1) != tc.copied || len(of) != len(copies) {
				t.Fatalf("%d copies, want copied %v", len(copies), tc.copied)
			}
			if !tc.copied {
				return
			}
			c := copies[0]
			subj, _ := ParseSubject(tc.subject)
			if string(c.Key) != DesiredKey(subj) || c.Topic != "desired" || string(c.Value) != string(e.Data()) {
				t.Errorf("copy key %q topic %q value %q", c.Key, c.Topic, c.Value)
			}
			ce, err := ParseRecord(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if ce.ID() != e.ID() || stringExt(ce, ExtPartitionKey) != string(c.Key) {
				t.Errorf("copy id %s partitionkey %q, want %s and the key %q", ce.ID(), stringExt(ce, ExtPartitionKey), e.ID(), c.Key)
			}
			v, _, err := verifier.Verify(ce, time.Now(), nil)
			if err != nil {
				t.Fatalf("copy does not verify: %v", err)
			}
			if got := stringExt(v, ExtPartitionKey); got != string(c.Key) {
				t.Errorf("signed partitionkey %q, want the key %q", got, c.Key)
			}
			if stringExt(e, ExtPartitionKey) != "c1" {
				t.Error("copying changed the config event")
			}
		})
	}
}
