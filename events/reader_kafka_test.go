//go:build integration

package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

func newReader(t testing.TB, r *rig, dec *events.Decoder, topic, group string, opts ...events.Option) *events.Reader {
	t.Helper()
	cl := kafkatest.Client(t, events.ReaderOpts()...)
	dlq, err := events.NewDeadLetter(cl, r.topics[events.TopicDeadLetter], opts...)
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, dlq, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := events.NewReader(cl, in, topic, group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rd
}

// TestFailingPartitionHoldsUpOnlyItself checks that while one partition's
// handler keeps failing, another partition's events are handled and
// committed.
func TestFailingPartitionHoldsUpOnlyItself(t *testing.T) {
	pins := map[string]int32{"cluster-a": 0, "cluster-b": 1}
	r := newRig(t, 2, pins)
	topic := r.topics[events.TopicConfig]
	r.publish("cluster-a", appUpsert(t, "cluster-a"))
	for range 3 {
		r.publish("cluster-b", appUpsert(t, "cluster-b"))
	}
	group, backoff := topic+".iso", events.WithMaxBackoff(20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	handledB, release := 0, make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- newReader(t, r, r.decoder(), topic, group, backoff).Run(ctx, func(_ context.Context, d *events.Decoded) error {
			if d.Partition == 0 {
				select {
				case <-release:
					cancel()
					return nil
				default:
					return errors.New("apiserver unavailable")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if handledB++; handledB == 3 {
				once.Do(func() { close(release) })
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("partition 1 was held up by partition 0's failing handler")
	}
	adm := kadm.NewClient(kafkatest.Client(t))
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 1, 1: 3} {
		if o, _ := offs.Lookup(topic, p); o.At != want {
			t.Errorf("partition %d committed at %d, want %d", p, o.At, want)
		}
	}
}

// TestPanickingHandlerDeadLetters checks that a handler panic dead-letters
// the record and the reader goes on.
func TestPanickingHandlerDeadLetters(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	r.publish("cluster-a", appUpsert(t, "cluster-a"), appUpsert(t, "cluster-a"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := newReader(t, r, r.decoder(), topic, topic+".panic").Run(ctx, func(_ context.Context, d *events.Decoded) error {
		if d.Offset == 0 {
			panic("nil map")
		}
		cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dl := consumeRaw(t, r.topics[events.TopicDeadLetter], 1)
	hs := map[string]string{}
	for _, h := range dl[0].Headers {
		hs[h.Key] = string(h.Value)
	}
	if hs[events.HeaderDLQReason] != "handler" || hs[events.HeaderDLQOffset] != "0" {
		t.Errorf("dead letter headers %v", hs)
	}
}

// TestDataLossIsReported deletes records a group has not read yet and checks
// that the reader reports the loss and goes on from the first record left.
func TestDataLossIsReported(t *testing.T) {
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	group := topic + ".loss"
	r.publish("cluster-a", appUpsert(t, "cluster-a"))
	r.read(topic, group, r.decoder(), 1) // committed at 1
	for range 4 {
		r.publish("cluster-a", appUpsert(t, "cluster-a"))
	}
	adm := kadm.NewClient(kafkatest.Client(t))
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3})
	if _, err := adm.DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	var losses []*kgo.ErrDataLoss
	got := r.read(topic, group, r.decoder(), 2, events.OnDataLoss(func(_ context.Context, l *kgo.ErrDataLoss) { losses = append(losses, l) }))
	if got[0].Offset != 3 {
		t.Errorf("resumed at %d, want 3 (the first record left)", got[0].Offset)
	}
	if len(losses) != 1 || losses[0].ConsumedTo != 1 || losses[0].ResetTo != 3 {
		t.Errorf("losses %+v, want one from 1 to 3", losses)
	}
}

// TestCrashRedeliversAtMostOneInterval stops a reader in the middle of a
// fetched batch, as a crash would: its handler never returns and nothing
// more is committed. Each record before that takes longer than the commit
// interval, so each was committed before the next began, and a reader of
// the same group delivers none of them again (at most the last one, were
// it finished within an interval of the commit before it), rather than
// the whole batch up to the crash.
func TestCrashRedeliversAtMostOneInterval(t *testing.T) {
	const total, crashAt, interval = 200, 57, 5 * time.Millisecond
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	es := make([]*event.Event, total)
	for i := range es {
		es[i] = appUpsert(t, "cluster-a")
	}
	if _, err := r.prod.Publish(t.Context(), es...); err != nil { // one produce: the reader fetches them together
		t.Fatal(err)
	}
	var committed atomic.Int64
	group, every := topic+".crash", events.WithCommitInterval(interval)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	crashed, release := make(chan int64, 1), make(chan struct{})
	first, done := newReader(t, r, r.decoder(), topic, group, every, events.OnCommit(func(_ int32, next int64) { committed.Store(next) })), make(chan error, 1)
	go func() {
		done <- first.Run(ctx, func(_ context.Context, d *events.Decoded) error {
			if d.Offset < crashAt {
				time.Sleep(2 * interval)
				return nil
			}
			crashed <- committed.Load()
			<-release
			return events.Fatal(errors.New("crashed"))
		})
	}()
	var atCrash int64
	select {
	case atCrash = <-crashed:
	case err := <-done:
		t.Fatalf("the reader stopped before the crash: %v", err)
	}
	if atCrash != crashAt {
		t.Errorf("committed up to %d when the crash came, want %d", atCrash, crashAt)
	}
	var again []int64
	err := newReader(t, r, r.decoder(), topic, group, every).Run(ctx, func(_ context.Context, d *events.Decoded) error {
		if d.Offset < crashAt {
			again = append(again, d.Offset)
		}
		if d.Offset == total-1 {
			cancel()
		}
		return nil
	})
	close(release)
	crashErr := <-done
	if err != nil {
		t.Fatal(err)
	}
	if crashErr == nil {
		t.Error("the crashed reader returned nil, want its fatal error")
	}
	if len(again) > 1 {
		t.Errorf("after a crash at offset %d, %d records were delivered again (%v), want at most 1", crashAt, len(again), again)
	}
}

// TestIdleReaderCommits checks that a reader that has handled all there is
// leaves nothing uncommitted while it waits for more, however long its
// commit interval: the first record is committed at once, the rest before
// the reader waits.
func TestIdleReaderCommits(t *testing.T) {
	const total = 3
	r := newRig(t, 1, nil)
	topic := r.topics[events.TopicConfig]
	r.publish("cluster-a", generations(t, "cluster-a", 1, total)...)
	commits := make(chan int64, total+1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rd, done := newReader(t, r, r.decoder(), topic, topic+".idle", events.WithCommitInterval(time.Hour),
		events.OnCommit(func(_ int32, next int64) { commits <- next })), make(chan error, 1)
	go func() {
		done <- rd.Run(ctx, func(context.Context, *events.Decoded) error { return nil })
	}()
	var got []int64
	for len(got) == 0 || got[len(got)-1] < total {
		select {
		case next := <-commits:
			got = append(got, next)
		case err := <-done:
			t.Fatalf("the reader stopped: %v", err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 || got[len(got)-1] != total {
		t.Errorf("commits %v while running, want 1 first and %d last", got, total)
	}
}

// BenchmarkReader reads 2,000 signed config events from one partition, a
// spoke's shape, with a handler that does nothing: the reader's own cost
// per record (fetching, verifying, decoding, committing), and how many
// commits a pass makes. Each pass reads the partition from the start with
// a group of its own.
func BenchmarkReader(b *testing.B) {
	const total = 2000
	r := newRig(b, 1, nil)
	topic := r.topics[events.TopicConfig]
	es := make([]*event.Event, total)
	for i := range es {
		es[i] = appUpsert(b, "cluster-a")
	}
	if _, err := r.prod.Publish(b.Context(), es...); err != nil {
		b.Fatal(err)
	}
	dec := r.decoder()
	var commits atomic.Int64
	b.ReportAllocs()
	pass := 0
	for b.Loop() {
		pass++
		rd := newReader(b, r, dec, topic, fmt.Sprintf("%s.bench-%d", topic, pass),
			events.OnCommit(func(int32, int64) { commits.Add(1) }))
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		var n atomic.Int64
		err := rd.Run(ctx, func(context.Context, *events.Decoded) error {
			if n.Add(1) == total {
				cancel()
			}
			return nil
		})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if n.Load() != total {
			b.Fatalf("read %d events, want %d", n.Load(), total)
		}
	}
	b.ReportMetric(float64(b.N*total)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(commits.Load())/float64(b.N), "commits/op")
}
