package events

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDesiredKeysShareTheClusterPartition checks that a desired-state key
// ("cluster/kind/namespace/name") lands on its cluster's partition, pinned or
// not, so a spoke reads one partition of each topic.
func TestDesiredKeysShareTheClusterPartition(t *testing.T) {
	p := NewPartitioner(map[string]int32{"pinned": 5})
	for _, cluster := range []string{"prod-eu-1", "edge-7", "pinned", "a"} {
		key := DesiredKey(Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "web"})
		if got, want := p.Partition(&kgo.Record{Key: []byte(key)}, 12), int(p.PartitionOf(cluster, 12)); got != want {
			t.Errorf("%s: partition %d, want the cluster's %d", key, got, want)
		}
	}
}

func TestDesiredCopy(t *testing.T) {
	tests := []struct {
		typ, subject string
		copied       bool
	}{
		{TypeApplicationUpserted, "clusters/c1/applications/argocd/web", true},
		{TypeApplicationDeleted, "clusters/c1/applications/argocd/web", true},
		{TypeRepositoryUpserted, "clusters/c1/repositories/argocd/r", true},
		{TypeOperationRequested, "clusters/c1/applications/argocd/web", false},
		{TypeClusterRegistered, "clusters/c1", false},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			e := event.New()
			e.SetType(tc.typ)
			e.SetSubject(tc.subject)
			r := &kgo.Record{Value: []byte("v"), Offset: 42, Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte("x")}}}
			c := desiredCopy(&e, r, "desired")
			if (c != nil) != tc.copied {
				t.Fatalf("copied %v, want %v", c != nil, tc.copied)
			}
			if c == nil {
				return
			}
			off, err := ConfigOffset(c)
			if err != nil || off != 42 || string(c.Value) != "v" || c.Topic != "desired" || len(c.Headers) != 2 {
				t.Errorf("copy %+v (offset %d, %v)", c, off, err)
			}
		})
	}
}
