package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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
