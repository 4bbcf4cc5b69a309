package cli

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStamp: a stamped batch carries the broker's time, keeps its records'
// offsets from the first, and its checksum verifies.
func TestStamp(t *testing.T) {
	b := kmsg.RecordBatch{Magic: 2, FirstTimestamp: 1000, MaxTimestamp: 1250, NumRecords: 1, LastOffsetDelta: 0, ProducerID: -1, FirstSequence: -1}
	b.Records = []byte{1, 2, 3}
	one := b.AppendTo(nil)
	binary.BigEndian.PutUint32(one[8:], uint32(len(one)-12))
	raw := append(append([]byte{}, one...), one...) // two batches in one request
	for _, at := range []int{0, len(raw) / 2} {
		if got := crc32.Checksum(raw[at+21:at+len(raw)/2], castagnoli); int32(got) == b.CRC && b.CRC != 0 {
			t.Fatal("the fixture's checksum is already right")
		}
	}
	stamp(raw, 5000)
	for _, at := range []int{0, len(raw) / 2} {
		var got kmsg.RecordBatch
		if err := got.ReadFrom(raw[at : at+len(raw)/2]); err != nil {
			t.Fatal(err)
		}
		if got.FirstTimestamp != 5000 || got.MaxTimestamp != 5250 {
			t.Errorf("timestamps %d..%d, want 5000..5250", got.FirstTimestamp, got.MaxTimestamp)
		}
		if want := int32(crc32.Checksum(raw[at+21:at+len(raw)/2], castagnoli)); got.CRC != want {
			t.Errorf("crc %x, want %x", got.CRC, want)
		}
	}
}

// TestEmbeddedBroker: records produced to the embedded broker come back
// with the broker's time and a checksum the client accepts, from a topic
// that asks for LogAppendTime as Argosy's do.
func TestEmbeddedBroker(t *testing.T) {
	c, err := startBroker(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lat := "LogAppendTime"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &lat}, "t"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	past := time.Now().Add(-48 * time.Hour)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v"), Timestamp: past}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Timestamp.Before(before) {
		t.Fatalf("records %v: want one stamped with the broker's time, not the producer's %s", recs, past)
	}
}
