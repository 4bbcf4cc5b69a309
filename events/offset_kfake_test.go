package events_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/argosyproj/argosy/events"
)

// TestListOffsetsWithATransactionOpen: with a transaction open, a
// partition's last stable offset is short of its high watermark, and
// ListOffsets lists each as its isolation level sees the partition. A time
// after every record a committed listing can reach lists that listing's
// end, the last stable offset, as kadm does (it lists the end again at the
// same isolation level), not the high watermark past records a read
// committed consumer cannot read yet.
func TestListOffsetsWithATransactionOpen(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("open"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	// Partition 0: one committed record at offset 0, then one in a
	// transaction still open at offset 1. Partition 1: empty.
	first := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Timestamp: first}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Timestamp: first.Add(time.Minute)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	later := first.Add(time.Second).UnixMilli() // after the committed record: only the open one is at or after it
	for _, tc := range []struct {
		name      string
		at        int64
		committed bool
		want      map[int32]int64
	}{
		{"start", events.ListStart, false, map[int32]int64{0: 0, 1: 0}},
		{"high watermark", events.ListEnd, false, map[int32]int64{0: 2, 1: 0}},
		{"last stable offset", events.ListEnd, true, map[int32]int64{0: 1, 1: 0}},
		{"a time before every record", first.Add(-time.Second).UnixMilli(), false, map[int32]int64{0: 0, 1: 0}},
		{"a time only the open transaction's record reaches", later, false, map[int32]int64{0: 1, 1: 0}},
		{"a time only the open transaction's record reaches, committed", later, true, map[int32]int64{0: 1, 1: 0}},
		{"a time after every record", time.Now().UnixMilli(), false, map[int32]int64{0: 2, 1: 0}},
		{"a time after every record, committed", time.Now().UnixMilli(), true, map[int32]int64{0: 1, 1: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.ListOffsets(ctx, plain, "t", []int32{0, 1}, tc.at, tc.committed)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] || got[1] != tc.want[1] {
				t.Errorf("ListOffsets = %v, want %v", got, tc.want)
			}
		})
	}
}

// listsByBroker counts the ListOffsets requests a client writes to each
// broker.
type listsByBroker struct {
	mu    sync.Mutex
	nodes map[int32]int
}

func (l *listsByBroker) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.ListOffsets) || err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[meta.NodeID]++
}

func (l *listsByBroker) counts() map[int32]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.nodes)
}

// total is how many ListOffsets requests the client wrote to any broker.
func (l *listsByBroker) total() int64 {
	var n int64
	for _, c := range l.counts() {
		n += int64(c)
	}
	return n
}

// TestListOffsetsAfterTheLeaderMoved: ListOffsets first asks the leader
// the client knows from producing; when the partition has moved since,
// that broker refuses, and the listing is sent again as a sharded request,
// which looks the new leader up, and answers right.
func TestListOffsetsAfterTheLeaderMoved(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "m"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lists := &listsByBroker{nodes: map[int32]int{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("m"), kgo.WithHooks(lists))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("r")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	old := c.LeaderFor("m", 0)
	moved := 1 - old%2 // the other of nodes 0 and 1
	if err := c.MoveTopicPartition("m", 0, moved); err != nil {
		t.Fatal(err)
	}
	end, err := events.ListOffset(ctx, cl, "m", 0, events.ListEnd, false)
	if err != nil {
		t.Fatalf("ListOffset after the move: %v", err)
	}
	if end != 3 {
		t.Errorf("end %d, want 3", end)
	}
	// The sharded request may ask the old leader once more, from metadata
	// cached before the move, before it looks the new one up.
	if got := lists.counts(); got[old] == 0 || got[moved] != 1 {
		t.Errorf("ListOffsets requests by broker %v: want the old leader %d asked first, then the new one %d once", got, old, moved)
	}
}
