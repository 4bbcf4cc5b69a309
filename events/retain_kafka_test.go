//go:build integration

package events_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// watched is a FetchSource that holds a weak pointer to every record its
// source returns, and to the bytes the record's value lies in (its
// batch, decompressed): it keeps none of them alive, and tells which
// something else still does.
type watched struct {
	src  events.FetchSource
	mu   sync.Mutex
	recs []watchedRecord
}

type watchedRecord struct {
	offset int64
	rec    weak.Pointer[kgo.Record]
	value  weak.Pointer[byte]
}

func (w *watched) PollFetches(ctx context.Context) kgo.Fetches {
	fs := w.src.PollFetches(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	fs.EachRecord(func(r *kgo.Record) {
		wr := watchedRecord{offset: r.Offset, rec: weak.Make(r)}
		if len(r.Value) > 0 {
			wr.value = weak.Make(&r.Value[0])
		}
		w.recs = append(w.recs, wr)
	})
	return fs
}

// alive collects garbage, then returns how many of the records below
// offset it saw, and the offsets of those that are still reachable, or
// whose value bytes are.
func (w *watched) alive(below int64) (n int, alive []int64) {
	for range 4 {
		runtime.GC()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.recs {
		if r.offset >= below {
			continue
		}
		n++
		if r.rec.Value() != nil || r.value.Value() != nil {
			alive = append(alive, r.offset)
		}
	}
	return n, alive
}

// TestReaderKeepsNoRecordItPassedOver has a Reader pass over many
// records of other clusters (WithSkip), in batches, and then handle one
// event of its own. While its handler runs, the reader must keep none of
// the records it passed over alive, nor the batches they lie in: it has
// not committed their offsets yet (a quiet interval, WithQuietCommitInterval,
// is not up), and what it holds until it does is their position, not
// them.
func TestReaderKeepsNoRecordItPassedOver(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for batch := range 4 {
		var theirs []*kgo.Record
		for i := range 50 {
			theirs = append(theirs, &kgo.Record{Topic: topic, Key: []byte("cluster-b"),
				Value: bytes.Repeat([]byte(fmt.Sprintf("batch %d record %d;", batch, i)), 40)})
		}
		if err := r.client.ProduceSync(ctx, theirs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	own := r.publish("cluster-a", appUpsert(t, "cluster-a"))[0].Offset

	cl := kafkatest.Client(t, events.ReaderOpts()...)
	in, err := events.NewIntake(r.decoder(), nil)
	if err != nil {
		t.Fatal(err)
	}
	src := &watched{src: cl}
	rd, err := events.NewReader(cl, in, topic, topic+".passed", events.WithFetchSource(src), events.WithQuietCommitInterval(time.Hour),
		events.WithSkip(func(rec *kgo.Record) bool { return string(rec.Key) != "cluster-a" }))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var alive []int64
	err = rd.Run(ctx, func(_ context.Context, d *events.Decoded) error {
		if d.Offset == own {
			n, alive = src.alive(own)
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 200 || len(alive) > 0 {
		t.Errorf("while handling its own event the reader keeps %d of the %d records it passed over alive, or their batches (offsets %v); want 200, none kept",
			len(alive), n, alive[:min(len(alive), 10)])
	}
}
