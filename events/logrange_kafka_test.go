//go:build integration

package events_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// rangeLog is a test's topics of plain records, written by hand, with or
// without transactions.
type rangeLog struct {
	t     *testing.T
	plain *kgo.Client
}

func newRangeLog(t *testing.T, partitions int32, names ...string) (*rangeLog, []string) {
	t.Helper()
	var topics []string
	for _, n := range names {
		topics = append(topics, kafkatest.Prefix(t)+n)
	}
	resp, err := kadm.NewClient(kafkatest.Client(t)).CreateTopics(t.Context(), partitions, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, topics...)
	return &rangeLog{t: t, plain: kafkatest.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))}, topics
}

func (l *rangeLog) put(cl *kgo.Client, topic string, p int32, values ...string) {
	l.t.Helper()
	for _, v := range values {
		if err := cl.ProduceSync(l.t.Context(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			l.t.Fatal(err)
		}
	}
}

// begin returns a transactional producer with a transaction begun.
func (l *rangeLog) begin(id string) *kgo.Client {
	l.t.Helper()
	cl := kafkatest.Client(l.t, kgo.TransactionalID(kafkatest.Prefix(l.t)+id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		l.t.Fatal(err)
	}
	return cl
}

func (l *rangeLog) end(cl *kgo.Client, how kgo.TransactionEndTry) {
	l.t.Helper()
	if err := cl.EndTransaction(l.t.Context(), how); err != nil {
		l.t.Fatal(err)
	}
}

// settle waits until the transaction markers are written (a coordinator
// writes them after it ends a transaction): until topic's partition p has
// stable offsets up to lso and offsets up to hw.
func (l *rangeLog) settle(topic string, p int32, lso, hw int64) {
	l.t.Helper()
	adm := kadm.NewClient(l.plain)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stable, err := adm.ListCommittedOffsets(l.t.Context(), topic)
		if err != nil {
			l.t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(l.t.Context(), topic)
		if err != nil {
			l.t.Fatal(err)
		}
		s, _ := stable.Lookup(topic, p)
		e, _ := ends.Lookup(topic, p)
		if s.Offset == lso && e.Offset == hw {
			return
		}
	}
	l.t.Fatalf("%s/%d: no stable offset %d and end %d in 10 s", topic, p, lso, hw)
}

// mark returns a time between the records before and after it.
func mark() time.Time {
	time.Sleep(20 * time.Millisecond)
	defer time.Sleep(20 * time.Millisecond)
	return time.Now()
}

// readRanges plans topics within b and reads them with a RangeReader,
// within 20 s. It returns what it read as "topic/partition value" (a
// marker's value is "marker") and the offsets passed.
func readRanges(t *testing.T, topics []string, b events.Bounds) ([]string, []events.Range, int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cl := kafkatest.Client(t, events.RangeConsumeOpts()...)
	ranges, err := events.PlanRanges(ctx, kadm.NewClient(cl), topics, b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := events.NewRangeReader(cl, ranges)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		recs, err := r.Poll(ctx, 3)
		if errors.Is(err, io.EOF) {
			return got, ranges, r.Passed(), nil
		}
		if err != nil {
			return got, ranges, r.Passed(), err
		}
		for _, rec := range recs {
			v := string(rec.Value)
			if rec.Attrs.IsControl() {
				v = "marker"
			}
			got = append(got, fmt.Sprintf("%s/%d %s", rec.Topic[len(rec.Topic)-1:], rec.Partition, v))
		}
	}
}

func total(ranges []events.Range) int64 {
	var n int64
	for _, r := range ranges {
		n += r.To - r.From
	}
	return n
}

// TestRangeReader reads ranges that end in every way a read-committed
// reader meets, on the real broker: each must end, with every record of
// the range in order and nothing past it.
func TestRangeReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		// write writes the log of topics a and b, and returns the
		// bounds to read it within.
		write func(l *rangeLog, a, b string) events.Bounds
		want  []string
	}{{
		name: "ending in a commit marker",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 0, "1")
			tx := l.begin("commit")
			l.put(tx, a, 0, "2", "3")
			l.end(tx, kgo.TryCommit)
			l.settle(a, 0, 4, 4)
			return events.Bounds{}
		},
		want: []string{"a/0 1", "a/0 2", "a/0 3", "a/0 marker"},
	}, {
		// The range ends at the last stable offset, before a transaction
		// still open, and its last record is an aborted one whose abort
		// marker is past the end: nothing at or past the end comes
		// while the open transaction stays open.
		name: "ending in an aborted transaction",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 0, "1")
			aborted, open := l.begin("aborted"), l.begin("open")
			l.put(aborted, a, 0, "aborted")
			l.put(open, a, 0, "open")
			l.end(aborted, kgo.TryAbort)
			l.t.Cleanup(func() {
				if err := open.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
					l.t.Error(err)
				}
			})
			l.settle(a, 0, 2, 4)
			return events.Bounds{}
		},
		want: []string{"a/0 1"},
	}, {
		name: "ending in an aborted transaction, by time",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 0, "1")
			tx := l.begin("aborted")
			l.put(tx, a, 0, "aborted")
			to := mark()
			l.end(tx, kgo.TryAbort)
			l.settle(a, 0, 3, 3)
			l.put(l.plain, a, 0, "2")
			return events.Bounds{To: to}
		},
		want: []string{"a/0 1"},
	}, {
		name: "an aborted transaction in the middle",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 0, "1")
			tx := l.begin("aborted")
			l.put(tx, a, 0, "x", "y")
			l.end(tx, kgo.TryAbort)
			l.settle(a, 0, 4, 4)
			l.put(l.plain, a, 0, "2")
			return events.Bounds{}
		},
		want: []string{"a/0 1", "a/0 marker", "a/0 2"},
	}, {
		name: "an empty partition",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 1, "1")
			return events.Bounds{}
		},
		want: []string{"a/1 1"},
	}, {
		name: "from and to by time",
		write: func(l *rangeLog, a, _ string) events.Bounds {
			l.put(l.plain, a, 0, "1")
			from := mark()
			l.put(l.plain, a, 0, "2", "3")
			to := mark()
			l.put(l.plain, a, 0, "4")
			return events.Bounds{From: from, To: to}
		},
		want: []string{"a/0 2", "a/0 3"},
	}, {
		name: "several topics",
		write: func(l *rangeLog, a, b string) events.Bounds {
			l.put(l.plain, a, 0, "1", "2")
			l.put(l.plain, b, 1, "3")
			tx := l.begin("both")
			l.put(tx, a, 1, "4")
			l.put(tx, b, 0, "5")
			l.end(tx, kgo.TryCommit)
			l.settle(a, 1, 2, 2)
			l.settle(b, 0, 2, 2)
			return events.Bounds{}
		},
		want: []string{"a/0 1", "a/0 2", "a/1 4", "a/1 marker", "b/0 5", "b/0 marker", "b/1 3"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l, topics := newRangeLog(t, 2, "a", "b")
			b := tc.write(l, topics[0], topics[1])
			got, ranges, passed, err := readRanges(t, topics, b)
			if err != nil {
				t.Fatalf("read %v: %v; read %q", ranges, err, got)
			}
			if diff := cmp.Diff(tc.want, sortedByPartition(got)); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
			if want := total(ranges); passed != want {
				t.Errorf("passed %d offsets, want the ranges' %d", passed, want)
			}
		})
	}
}

// sortedByPartition orders what readRanges read by partition, keeping
// each partition's order: the order across partitions is the client's.
func sortedByPartition(got []string) []string {
	by := map[string][]string{}
	for _, g := range got {
		by[g[:3]] = append(by[g[:3]], g)
	}
	var out []string
	for _, p := range []string{"a/0", "a/1", "b/0", "b/1"} {
		out = append(out, by[p]...)
	}
	return out
}

// TestRangeReaderStops: Poll returns ctx's error once ctx ends, here
// while it waits for offsets past the log's end.
func TestRangeReaderStops(t *testing.T) {
	l, topics := newRangeLog(t, 1, "a")
	l.put(l.plain, topics[0], 0, "1")
	cl := kafkatest.Client(t, events.RangeConsumeOpts()...)
	r, err := events.NewRangeReader(cl, []events.Range{{Topic: topics[0], Partition: 0, From: 0, To: 10}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(1500*time.Millisecond, cancel)
	began := time.Now()
	for err == nil {
		_, err = r.Poll(ctx, 0)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll = %v, want context.Canceled", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Poll returned %s after the cancellation", took)
	}
}

// TestRangeReaderNeedsReadCommitted: a client that would read aborted
// records, or not see markers, is refused.
func TestRangeReaderNeedsReadCommitted(t *testing.T) {
	for _, opts := range [][]kgo.Opt{nil, {kgo.FetchIsolationLevel(kgo.ReadCommitted())}, {kgo.KeepControlRecords()}} {
		if _, err := events.NewRangeReader(kafkatest.Client(t, opts...), nil); err == nil {
			t.Errorf("NewRangeReader with %d options: no error", len(opts))
		}
	}
}

// TestRangeReaderStartDeleted: records deleted after the plan (retention,
// DeleteRecords), up to the partition's end, leave nothing to read: the
// range ends, though no record at or past its end ever comes.
func TestRangeReaderStartDeleted(t *testing.T) {
	l, topics := newRangeLog(t, 1, "a")
	l.put(l.plain, topics[0], 0, "1", "2", "3")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cl := kafkatest.Client(t, events.RangeConsumeOpts()...)
	adm := kadm.NewClient(cl)
	ranges, err := events.PlanRanges(ctx, adm, topics, events.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	var gone kadm.Offsets
	gone.Add(kadm.Offset{Topic: topics[0], Partition: 0, At: 3})
	deleted, err := adm.DeleteRecords(ctx, gone)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := events.NewRangeReader(cl, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for {
		recs, err := r.Poll(ctx, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %v: %v", ranges, err)
		}
		for _, rec := range recs {
			t.Errorf("read %s at %d, deleted before the read", rec.Value, rec.Offset)
		}
	}
	if want := total(ranges); r.Passed() != want {
		t.Errorf("passed %d offsets, want the ranges' %d", r.Passed(), want)
	}
}

// TestRangeReaderLongAbortedEnd: a range ending, before a transaction still
// open, in more aborted records than one fetch of the leader check holds
// ends all the same.
func TestRangeReaderLongAbortedEnd(t *testing.T) {
	l, topics := newRangeLog(t, 1, "a")
	a := topics[0]
	l.put(l.plain, a, 0, "1")
	aborted, open := l.begin("aborted"), l.begin("open")
	for range 12 {
		big := make([]byte, 200<<10)
		rand.Read(big) // incompressible
		l.put(aborted, a, 0, string(big))
	}
	l.put(open, a, 0, "open")
	l.end(aborted, kgo.TryAbort)
	t.Cleanup(func() {
		if err := open.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
			t.Error(err)
		}
	})
	l.settle(a, 0, 13, 15)
	got, ranges, passed, err := readRanges(t, topics, events.Bounds{})
	if err != nil {
		t.Fatalf("read %v: %v; read %q", ranges, err, got)
	}
	if diff := cmp.Diff([]string{"a/0 1"}, got); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
	if want := total(ranges); passed != want {
		t.Errorf("passed %d offsets, want the ranges' %d", passed, want)
	}
}

// TestRangeReaderPollCancelled: a poll whose context ends as the client
// hands it records loses none of them; the next poll hands them out.
func TestRangeReaderPollCancelled(t *testing.T) {
	l, topics := newRangeLog(t, 1, "a")
	l.put(l.plain, topics[0], 0, "1", "2", "3")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cancelled, stop := context.WithCancel(ctx)
	defer stop()
	// The client calls the hook as it hands out record "2", after it
	// looked at the poll's context.
	cl := kafkatest.Client(t, append(events.RangeConsumeOpts(), kgo.WithHooks(unbuffered(func(r *kgo.Record) {
		if string(r.Value) == "2" {
			stop()
		}
	})))...)
	ranges, err := events.PlanRanges(ctx, kadm.NewClient(cl), topics, events.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := events.NewRangeReader(cl, ranges)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	poll := func(ctx context.Context) error {
		recs, err := r.Poll(ctx, 1)
		for _, rec := range recs {
			got = append(got, string(rec.Value))
		}
		return err
	}
	if err := poll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := poll(cancelled); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll with its context cancelled = %v, want context.Canceled", err)
	}
	for {
		err := poll(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"1", "2", "3"}, got); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}

// unbuffered is a client hook called as the client hands out a record.
type unbuffered func(*kgo.Record)

func (f unbuffered) OnFetchRecordUnbuffered(r *kgo.Record, _ bool) { f(r) }

// TestRangeReaderManyAbortedEnds: many partitions whose ranges end in
// aborted records, before a transaction still open, all end within
// seconds: the leader check does not wait out the client's own fetch once
// for every partition.
func TestRangeReaderManyAbortedEnds(t *testing.T) {
	const partitions = 60
	l, topics := newRangeLog(t, partitions, "a")
	a := topics[0]
	aborted, open := l.begin("aborted"), l.begin("open")
	for p := range int32(partitions) {
		l.put(aborted, a, p, "aborted")
		l.put(open, a, p, "open")
	}
	l.end(aborted, kgo.TryAbort)
	t.Cleanup(func() {
		if err := open.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
			t.Error(err)
		}
	})
	for p := range int32(partitions) {
		l.settle(a, p, 1, 3)
	}
	got, ranges, passed, err := readRanges(t, topics, events.Bounds{})
	if err != nil {
		t.Fatalf("read %d ranges: %v; read %q", len(ranges), err, got)
	}
	if len(got) > 0 {
		t.Errorf("read %q, want nothing", got)
	}
	if want := total(ranges); passed != want || want != partitions {
		t.Errorf("passed %d offsets, want the ranges' %d (%d)", passed, want, partitions)
	}
}
