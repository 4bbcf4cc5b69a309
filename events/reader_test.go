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

func newReader(t testing.TB, r *rig, dec *events.Decoder, cfg events.ReaderConfig, opts ...events.Option) *events.Reader {
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
	rd, err := events.NewReader(cl, in, cfg, opts...)
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
	cfg := events.ReaderConfig{Topic: topic, Group: topic + ".iso", MaxBackoff: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	handledB, release := 0, make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- newReader(t, r, r.decoder(), cfg).Run(ctx, func(_ context.Context, d *events.Decoded) error {
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
	offs, err := adm.FetchOffsets(context.Background(), cfg.Group)
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
	err := newReader(t, r, r.decoder(), events.ReaderConfig{Topic: topic, Group: topic + ".panic"}).Run(ctx, func(_ context.Context, d *events.Decoded) error {
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
	cfg := events.ReaderConfig{Topic: topic, Group: topic + ".loss"}
	r.publish("cluster-a", appUpsert(t, "cluster-a"))
	r.read(cfg, r.decoder(), 1) // committed at 1
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
	cfg.OnDataLoss = func(_ context.Context, l *kgo.ErrDataLoss) { losses = append(losses, l) }
	got := r.read(cfg, r.decoder(), 2)
	if got[0].Offset != 3 {
		t.Errorf("resumed at %d, want 3 (the first record left)", got[0].Offset)
	}
	if len(losses) != 1 || losses[0].ConsumedTo != 1 || losses[0].ResetTo != 3 {
		t.Errorf("losses %+v, want one from 1 to 3", losses)
	}
}

// BenchmarkReader reads 2,000 signed config events from one partition, a
// spoke's shape, with a handler that does nothing: the reader's own cost
// per record (fetching, verifying, decoding, committing). Each pass reads
// the partition from the start with a group of its own.
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
	b.ReportAllocs()
	pass := 0
	for b.Loop() {
		pass++
		rd := newReader(b, r, dec, events.ReaderConfig{Topic: topic, Group: fmt.Sprintf("%s.bench-%d", topic, pass)})
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
}
