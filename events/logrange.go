package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Range is the offsets of one partition from From to To (exclusive).
type Range struct {
	Topic     string
	Partition int32
	From, To  int64
}

// Bounds say where PlanRanges starts and ends each partition. The zero
// Bounds is each partition from its start to its last stable offset.
type Bounds struct {
	// From, unless zero, starts each partition at its first record
	// appended at or after it (log times are in milliseconds).
	From time.Time
	// Offsets start the partitions they name there, by topic; the rest
	// start as From says. An offset the broker does not hold is an error.
	Offsets map[string]map[int32]int64
	// To, unless zero, ends each partition before its first record
	// appended at or after it.
	To time.Time
}

// PlanRanges lists the range of every partition of topics within b, by
// topic and partition. A range ends at the partition's last stable offset
// (or earlier, by b.To): no open transaction is waited for. Empty ranges
// (From == To) are listed too; a RangeReader passes over them.
func PlanRanges(ctx context.Context, adm *kadm.Client, topics []string, b Bounds) ([]Range, error) {
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		l, err := f(ctx, topics...)
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list %s offsets of %s (do the topics exist?): %w", what, strings.Join(topics, ", "), err)
		}
		return l, nil
	}
	at := func(t time.Time) func(context.Context, ...string) (kadm.ListedOffsets, error) {
		return func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
			if t.IsZero() {
				return nil, nil
			}
			return adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), ts...)
		}
	}
	ends, err := list("end", adm.ListCommittedOffsets)
	if err != nil {
		return nil, err
	}
	starts, err := list("start", adm.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	from, err := list("first", at(b.From))
	if err != nil {
		return nil, err
	}
	to, err := list("last", at(b.To))
	if err != nil {
		return nil, err
	}
	var out []Range
	ends.Each(func(o kadm.ListedOffset) {
		first, _ := starts.Lookup(o.Topic, o.Partition)
		r := Range{Topic: o.Topic, Partition: o.Partition, From: first.Offset, To: o.Offset}
		if t, ok := to.Lookup(o.Topic, o.Partition); ok && t.Offset >= 0 {
			r.To = min(r.To, t.Offset)
		}
		if f, ok := from.Lookup(o.Topic, o.Partition); ok && f.Offset >= 0 {
			r.From = max(r.From, f.Offset)
		}
		if at, ok := b.Offsets[o.Topic][o.Partition]; ok {
			r.From = at
		}
		r.From = min(r.From, r.To)
		out = append(out, r)
	})
	if err := checkStarts(b.Offsets, starts, ends); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Range) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// checkStarts returns an error for a start offset outside the offsets the
// broker holds.
func checkStarts(offsets map[string]map[int32]int64, starts, ends kadm.ListedOffsets) error {
	for t, ps := range offsets {
		for p, at := range ps {
			first, _ := starts.Lookup(t, p)
			end, ok := ends.Lookup(t, p)
			if !ok {
				return fmt.Errorf("start offset of %s/%d: no such partition", t, p)
			}
			if at < first.Offset || at > end.Offset {
				return fmt.Errorf("start offset %d of %s/%d: outside the offsets the broker holds, %d to %d", at, t, p, first.Offset, end.Offset)
			}
		}
	}
	return nil
}

// RangeConsumeOpts are the options of a RangeReader's client: read
// committed, transaction markers kept.
func RangeConsumeOpts() []kgo.Opt {
	return []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

// RangeReader reads ranges of the log, each to its end, on a client made
// with RangeConsumeOpts. It hands out every record of the ranges,
// transaction markers included, in offset order within each partition.
// A read-committed client never gets aborted records, so a range may end
// with records that never come: a partition is read once a record at or
// past its end comes, or once the partition's leader shows that nothing
// a read-committed reader gets lies between the partition's next offset
// and its end (offsets below the log's start, gone since the plan, are
// passed over). A partition read is paused on the client (removing it while
// others are fetched would stall them): a caller that reads on from the
// ends removes the partitions, resumes them and adds them again.
type RangeReader struct {
	client *kgo.Client
	// left are the ranges not read to their end, From moved to the next
	// offset to read.
	left   map[partition]Range
	passed int64
	held   []*kgo.Record
	log    *slog.Logger
}

type partition struct {
	topic string
	p     int32
}

// checkBytes is the most a fetch of the leader check reads, of one
// partition or of all of a leader's: each fetch waits behind the client's
// own, so one reads as far as it may.
const checkBytes = 16 << 20

// rangeStall is how long Poll waits for records before it asks the
// leaders whether the partitions left are read.
const rangeStall = time.Second

// NewRangeReader returns a reader of ranges on client, which it starts
// consuming them. It takes the WithLogger option.
func NewRangeReader(client *kgo.Client, ranges []Range, opts ...Option) (*RangeReader, error) {
	if level, _ := client.OptValue(kgo.FetchIsolationLevel).(int8); level != 1 { // read committed
		return nil, errors.New("events: range reader: the client must read committed (RangeConsumeOpts)")
	}
	if keep, _ := client.OptValue(kgo.KeepControlRecords).(bool); !keep {
		return nil, errors.New("events: range reader: the client must keep control records (RangeConsumeOpts)")
	}
	r := &RangeReader{client: client, left: map[partition]Range{}, log: newOptions(opts).Log}
	consume := map[string]map[int32]kgo.Offset{}
	for _, rg := range ranges {
		if rg.From < rg.To {
			r.left[partition{rg.Topic, rg.Partition}] = rg
			if consume[rg.Topic] == nil {
				consume[rg.Topic] = map[int32]kgo.Offset{}
			}
			consume[rg.Topic][rg.Partition] = kgo.NewOffset().At(rg.From)
		}
	}
	client.AddConsumePartitions(consume)
	return r, nil
}

// Passed is the number of offsets read so far: records, markers and the
// aborted records the client passed over.
func (r *RangeReader) Passed() int64 { return r.passed }

// Poll returns the next records of the ranges, at most max of them (0: no
// limit), and io.EOF once every range is read. A fetch error is returned
// as it comes, wrapped; the records of that poll come with the next call,
// as do those of a poll whose ctx ended as the client handed them out.
// After a *kgo.ErrDataLoss (records gone while reading) a caller may read
// on.
func (r *RangeReader) Poll(ctx context.Context, max int) ([]*kgo.Record, error) {
	if held := r.held; held != nil {
		r.held = nil
		return held, nil
	}
	for len(r.left) > 0 {
		pctx, cancel := context.WithTimeout(ctx, rangeStall)
		fs := r.client.PollRecords(pctx, max)
		stalled := pctx.Err() != nil
		cancel()
		// The client moved past what it handed out: take it before
		// anything else, to hand it out on the next call.
		recs := r.take(fs)
		if err := ctx.Err(); err != nil {
			r.held = recs
			return nil, err
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			if !stalled || !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, fmt.Errorf("fetch %s/%d: %w", t, p, err))
			}
		})
		if err := errors.Join(errs...); err != nil {
			r.held = recs
			return nil, err
		}
		if len(recs) > 0 {
			return recs, nil
		}
		if stalled {
			r.settle(ctx)
		}
	}
	return nil, io.EOF
}

// take returns the records of fs within the ranges and moves them on.
func (r *RangeReader) take(fs kgo.Fetches) []*kgo.Record {
	var out []*kgo.Record
	done := map[string][]int32{}
	fs.EachRecord(func(rec *kgo.Record) {
		k := partition{rec.Topic, rec.Partition}
		rg, reading := r.left[k]
		if !reading || rec.Offset < rg.From {
			return
		}
		if rec.Offset < rg.To {
			out = append(out, rec)
		}
		next := min(rec.Offset+1, rg.To)
		r.passed += next - rg.From
		if rg.From = next; next < rg.To {
			r.left[k] = rg
			return
		}
		delete(r.left, k)
		done[k.topic] = append(done[k.topic], k.p)
	})
	if len(done) > 0 {
		r.client.PauseFetchPartitions(done)
	}
	return out
}

// settle asks the leaders of the partitions left how far from each
// partition's next offset the log holds nothing a read-committed reader
// gets, moves the ranges on so far, and ends those with nothing left. It
// asks each leader once for all its partitions, again while ranges move:
// a fetch of the check waits on its connection behind the client's own.
func (r *RangeReader) settle(ctx context.Context) {
	var topics []string
	for k := range r.left {
		topics = append(topics, k.topic)
	}
	adm := kadm.NewClient(r.client)
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		r.log.DebugContext(ctx, "range reader: topic ids", "err", err)
		return
	}
	done := map[string][]int32{}
	for asking := maps.Clone(r.left); len(asking) > 0; {
		moved := r.firsts(ctx, adm, asking, td)
		clear(asking)
		for k, next := range moved {
			rg := r.left[k]
			if next = min(next, rg.To); next <= rg.From {
				continue
			}
			r.passed += next - rg.From
			if rg.From = next; next < rg.To {
				r.left[k], asking[k] = rg, rg
				continue
			}
			delete(r.left, k)
			done[k.topic] = append(done[k.topic], k.p)
		}
	}
	if len(done) > 0 {
		r.client.PauseFetchPartitions(done)
	}
}

// firsts fetches the partitions of ranges from their From on their
// leaders, one fetch a leader, read as the client reads them. It returns,
// for each partition that answered, the offset of the first record the
// fetch got, or, if none, the offset after what it read; for a partition
// whose From is below the log's start, the log's start.
func (r *RangeReader) firsts(ctx context.Context, adm *kadm.Client, ranges map[partition]Range, td kadm.TopicDetails) map[partition]int64 {
	byLeader := map[int32]*kmsg.FetchRequest{}
	for k, rg := range ranges {
		leader, epoch, err := r.client.PartitionLeader(k.topic, k.p)
		if err != nil || leader < 0 {
			r.log.DebugContext(ctx, "range reader: no leader", "topic", k.topic, "partition", k.p, "err", err)
			continue
		}
		if byLeader[leader] == nil {
			byLeader[leader] = kmsg.NewPtrFetchRequest()
			byLeader[leader].IsolationLevel, byLeader[leader].MaxBytes = 1, checkBytes
		}
		addFetch(byLeader[leader], rg, epoch, td[k.topic].ID)
	}
	names := map[[16]byte]string{}
	for _, d := range td {
		names[d.ID] = d.Topic
	}
	out := map[partition]int64{}
	for leader, req := range byLeader {
		resp, err := req.RequestWith(ctx, r.client.Broker(int(leader)))
		if err != nil {
			r.log.DebugContext(ctx, "range reader: leader check", "broker", leader, "err", err)
			continue
		}
		for _, t := range resp.Topics {
			name := cmp.Or(t.Topic, names[t.TopicID])
			for i := range t.Partitions {
				k := partition{name, t.Partitions[i].Partition}
				if rg, ok := ranges[k]; ok {
					if next, ok := r.first(ctx, adm, rg, &t.Partitions[i]); ok {
						out[k] = next
					}
				}
			}
		}
	}
	return out
}

// addFetch adds rg's partition, from rg.From, to req.
func addFetch(req *kmsg.FetchRequest, rg Range, epoch int32, id [16]byte) {
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.CurrentLeaderEpoch, p.PartitionMaxBytes = rg.Partition, rg.From, epoch, checkBytes
	for i := range req.Topics {
		if req.Topics[i].Topic == rg.Topic {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
			return
		}
	}
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID, t.Partitions = rg.Topic, id, []kmsg.FetchRequestTopicPartition{p}
	req.Topics = append(req.Topics, t)
}

// first reads a leader's answer for rg's partition as the client reads
// it, and returns the offset of the first record there, or, if none, the
// offset after what it read; below the log's start, the log's start.
func (r *RangeReader) first(ctx context.Context, adm *kadm.Client, rg Range, rp *kmsg.FetchResponseTopicPartition) (int64, bool) {
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Offset: rg.From,
		IsolationLevel: kgo.ReadCommitted(), Topic: rg.Topic, Partition: rg.Partition},
		rp, kgo.DefaultDecompressor(), nil)
	switch {
	case errors.Is(fp.Err, kerr.OffsetOutOfRange):
		start, err := r.logStart(ctx, adm, rg)
		return start, err == nil
	case fp.Err != nil:
		r.log.DebugContext(ctx, "range reader: leader check", "topic", rg.Topic, "partition", rg.Partition, "err", fp.Err)
		return 0, false
	case len(fp.Records) > 0:
		return fp.Records[0].Offset, true
	}
	return next, true
}

// logStart returns the offset the log of rg's partition starts at.
func (r *RangeReader) logStart(ctx context.Context, adm *kadm.Client, rg Range) (int64, error) {
	starts, err := adm.ListStartOffsets(ctx, rg.Topic)
	if err != nil {
		return 0, err
	}
	start, ok := starts.Lookup(rg.Topic, rg.Partition)
	if !ok {
		return 0, fmt.Errorf("start of %s/%d: not listed", rg.Topic, rg.Partition)
	}
	if start.Err == nil {
		r.log.InfoContext(ctx, "range reader: records gone from the broker before they were read (retention?)",
			"topic", rg.Topic, "partition", rg.Partition, "from", rg.From, "log_start", start.Offset)
	}
	return start.Offset, start.Err
}
