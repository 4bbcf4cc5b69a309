package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
)

// Handler applies one decoded event. It must be idempotent: after a crash the
// records since the partition's last commit are delivered again, which are
// at most those finished within one commit interval (WithCommitInterval). Its error
// decides what happens to the record:
//   - nil: done. Its offset is committed at once if the partition's last
//     commit is at least an interval old; otherwise with the next record
//     finished after that, or before the reader waits for more records or
//     stops, whichever comes first.
//   - Poison(err): dead-lettered with the error, then done. A handler that
//     panics is treated the same way.
//   - Fatal(err): Run stops and returns err. Records finished before it are
//     committed; this one is not.
//   - any other error: retried with backoff until it succeeds or ctx ends;
//     only this partition waits.
type Handler func(ctx context.Context, d *Decoded) error

// readerConfig is what a Reader is given: its topic and group, and what
// its options set.
type readerConfig struct {
	topic          string
	group          string
	partitions     []int32
	start          kgo.Offset
	skip           func(*kgo.Record) bool
	onDataLoss     func(ctx context.Context, loss *kgo.ErrDataLoss)
	onRefused      func(ctx context.Context, rec *kgo.Record, reason error) error
	onCommit       func(partition int32, next int64)
	offsets        OffsetStore
	fetches        FetchSource
	maxBackoff     time.Duration
	commitInterval time.Duration
	quietInterval  time.Duration
}

// WithPartitions makes a Reader read these partitions of its topic by
// direct assignment; the default is all of them.
func WithPartitions(partitions ...int32) Option {
	return func(o *options) { o.reader.partitions = partitions }
}

// WithStartOffset sets where a Reader begins a partition with no committed
// offset; the default is the earliest offset.
func WithStartOffset(start kgo.Offset) Option { return func(o *options) { o.reader.start = start } }

// WithSkip makes a Reader ask skip first about every record; true means
// the record is not for this reader (another cluster sharing the
// partition) and is passed over without decoding.
func WithSkip(skip func(*kgo.Record) bool) Option { return func(o *options) { o.reader.skip = skip } }

// OnDataLoss makes a Reader call f when the broker no longer has the
// records it was about to read (retention, truncation, an unclean
// election). Reading goes on from where the client reset to; an agent uses
// this to ask for a resync.
func OnDataLoss(f func(ctx context.Context, loss *kgo.ErrDataLoss)) Option {
	return func(o *options) { o.reader.onDataLoss = f }
}

// OnRefused makes a Reader tell f about every record that fails decoding,
// before it is dead-lettered: a spoke acknowledges such records as
// rejected. An error from f is retried like a handler error.
func OnRefused(f func(ctx context.Context, rec *kgo.Record, reason error) error) Option {
	return func(o *options) { o.reader.onRefused = f }
}

// OnCommit makes a Reader tell f each offset it committed for a
// partition: the offset of the next record to read. Nothing below it is
// delivered again unless the group's offsets are reset.
func OnCommit(f func(partition int32, next int64)) Option {
	return func(o *options) { o.reader.onCommit = f }
}

// OffsetStore keeps a Reader's offsets in place of a consumer group: an
// agent keeps its config offset in its own state, so that the broker's
// group coordinator holds nothing for it. Offsets returns the offset of
// the next record to read of each of topic's partitions it holds one for;
// Commit stores one, once the effect of every record below it is durable.
// An error from either is retried like a handler's, unless it is Fatal.
type OffsetStore interface {
	Offsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
	Commit(ctx context.Context, topic string, partition int32, next int64) error
}

// MemoryOffsets is an OffsetStore in memory, for a Reader that starts
// afresh each time its process runs (an agent's reader of live
// questions). The zero value is ready.
type MemoryOffsets struct {
	mu   sync.Mutex
	next map[int32]int64
}

// Offsets returns the next offset committed for each of partitions that
// has one; the topic is not looked at: a store serves one topic.
func (m *MemoryOffsets) Offsets(_ context.Context, _ string, partitions []int32) (map[int32]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]int64{}
	for _, p := range partitions {
		if n, ok := m.next[p]; ok {
			out[p] = n
		}
	}
	return out, nil
}

// Commit records next as partition's next offset.
func (m *MemoryOffsets) Commit(_ context.Context, _ string, partition int32, next int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == nil {
		m.next = map[int32]int64{}
	}
	m.next[partition] = next
	return nil
}

// WithOffsetStore makes a Reader keep its offsets in s rather than in a
// consumer group; NewReader then needs no group.
func WithOffsetStore(s OffsetStore) Option { return func(o *options) { o.reader.offsets = s } }

// FetchSource is where a Reader or a TrustFollower takes its fetches
// from: their client itself by default, or a Demux's share of a client
// that several of them read through (WithFetchSource).
type FetchSource interface {
	PollFetches(ctx context.Context) kgo.Fetches
}

// WithFetchSource makes a Reader or a TrustFollower poll src rather than
// its client, which it still uses to assign, pause and resume its
// partitions and for admin requests: src is a Demux's share of that
// client (Demux.Topic).
func WithFetchSource(src FetchSource) Option { return func(o *options) { o.reader.fetches = src } }

// WithMaxBackoff caps the wait between a Reader's retries of a failing
// handler; the default is 30 s.
func WithMaxBackoff(d time.Duration) Option { return func(o *options) { o.reader.maxBackoff = d } }

// WithCommitInterval sets the least time between a Reader's commits of a
// partition while records keep coming: a finished record's offset is
// committed at once if no commit was made in the last interval, and
// otherwise with a later record's. Whatever is finished is committed
// before the reader waits for more records and when it stops. So a crash
// delivers again at most the records finished within one interval. The
// default is 100 ms.
func WithCommitInterval(d time.Duration) Option {
	return func(o *options) { o.reader.commitInterval = d }
}

// WithQuietCommitInterval sets the least time between a Reader's commits
// of a partition while the records finished since its last commit had no
// effect: passed over (WithSkip) or transaction markers. Such progress is
// committed after d, or with the next record that had one, or when the
// reader stops; a crash reads those records again, and passes over them
// again. An agent that shares its config partition with other clusters
// keeps its offset where a write costs more than a Kafka commit, and
// does not write it for each of theirs. The default is the commit
// interval.
func WithQuietCommitInterval(d time.Duration) Option {
	return func(o *options) { o.reader.quietInterval = d }
}

// Reader consumes partitions by direct assignment, decodes each record, runs
// a handler, dead-letters poison records and commits offsets after the
// handler's effect is done. Each partition has its own worker, which handles
// the partition's records in order and commits them; a partition whose
// handler keeps failing holds up only itself.
type Reader struct {
	client *kgo.Client
	adm    *kadm.Client
	in     *Intake
	cfg    readerConfig
	log    *slog.Logger
	tracer trace.Tracer
	inst   *instruments
}

// NewReader returns a reader of topic that takes records through in and
// commits its offsets in group, or in the store WithOffsetStore gives, and
// then group must be empty; the reader does not join the group, it only
// stores offsets there. client must not be in a consumer group: the
// reader adds its partitions to it directly. It should use ReaderOpts. It
// takes the reader's options (WithPartitions, WithStartOffset, WithSkip,
// OnDataLoss, OnRefused, OnCommit, WithOffsetStore, WithFetchSource,
// WithMaxBackoff, WithCommitInterval) and WithLogger, WithTracerProvider
// and WithMeterProvider.
func NewReader(client *kgo.Client, in *Intake, topic, group string, opts ...Option) (*Reader, error) {
	o := newOptions(opts)
	cfg := o.reader
	if topic == "" || (group == "") == (cfg.offsets == nil) {
		return nil, errors.New("reader: a topic, and a group or an offset store but not both, are required")
	}
	if client == nil || in == nil {
		return nil, errors.New("reader: a client and an intake are required")
	}
	cfg.topic, cfg.group = topic, group
	if cfg.fetches == nil {
		cfg.fetches = client
	}
	if cfg.maxBackoff <= 0 {
		cfg.maxBackoff = 30 * time.Second
	}
	if cfg.commitInterval <= 0 {
		cfg.commitInterval = 100 * time.Millisecond
	}
	cfg.quietInterval = max(cfg.quietInterval, cfg.commitInterval)
	if cfg.start == (kgo.Offset{}) {
		cfg.start = kgo.NewOffset().AtStart()
	}
	return &Reader{client: client, adm: kadm.NewClient(client), in: in, cfg: cfg, log: o.Log,
		tracer: o.tracer(), inst: newInstruments(o.Meters)}, nil
}

// ReaderOpts are client options for a Reader's client: on an out-of-range
// offset (data loss, retention) restart at the earliest offset rather than
// franz-go's default of one minute back, and read only committed records.
// Transaction markers come too: each takes an offset, and the reader
// commits past them, so a partition read to its end has its committed
// offset at its end, and its lag is zero.
func ReaderOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// The hub writes config events in transactions (ConfigWriter):
		// never act on a record of an aborted one.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords()}
}

// Run reads until ctx ends (then it returns nil) or a fatal error.
func (r *Reader) Run(ctx context.Context, h Handler) error {
	start, lost, err := r.startOffsets(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for _, loss := range lost {
		r.fetchError(ctx, loss.Topic, loss.Partition, loss)
	}
	g, gctx := errgroup.WithContext(ctx)
	workers := make(map[int32]chan []*kgo.Record, len(start))
	for p := range start {
		ch := make(chan []*kgo.Record, 1)
		workers[p] = ch
		g.Go(func() error { return r.work(gctx, ch, h) })
	}
	r.client.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.topic: start})
	defer r.client.RemoveConsumePartitions(map[string][]int32{r.cfg.topic: slices.Collect(maps.Keys(start))})
	g.Go(func() error { return r.poll(gctx, workers) })
	err = g.Wait()
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// poll fetches and hands each partition's records to its worker. A worker
// still busy with its last batch has its partition paused, and the records
// wait here until it is free, so that other partitions keep flowing.
func (r *Reader) poll(ctx context.Context, workers map[int32]chan []*kgo.Record) error {
	defer func() {
		for _, ch := range workers {
			close(ch)
		}
	}()
	pending := map[int32][]*kgo.Record{}
	for {
		for p, recs := range pending {
			select {
			case workers[p] <- recs:
				delete(pending, p)
				r.client.ResumeFetchPartitions(map[string][]int32{r.cfg.topic: {p}})
			default:
			}
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if len(pending) > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		}
		fetches := r.cfg.fetches.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("reader: kafka client closed")
		}
		fetches.EachError(func(t string, p int32, err error) { r.fetchError(ctx, t, p, err) })
		fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
			p := ftp.Partition
			if len(ftp.Records) == 0 {
				return
			}
			if _, waiting := pending[p]; !waiting {
				select {
				case workers[p] <- ftp.Records:
					return
				default:
				}
				r.client.PauseFetchPartitions(map[string][]int32{r.cfg.topic: {p}})
			}
			pending[p] = append(pending[p], ftp.Records...)
		})
	}
}

func (r *Reader) fetchError(ctx context.Context, topic string, p int32, err error) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return // the poll's own timeout
	}
	var loss *kgo.ErrDataLoss
	if errors.As(err, &loss) {
		r.log.ErrorContext(ctx, "data loss", "topic", topic, "partition", p, "consumed_to", loss.ConsumedTo, "reset_to", loss.ResetTo)
		if r.cfg.onDataLoss != nil {
			r.cfg.onDataLoss(ctx, loss)
		}
		return
	}
	r.log.WarnContext(ctx, "fetch failed", "topic", topic, "partition", p, "err", err)
}

// work handles one partition's batches in order. Each finished record's
// offset is committed within the commit interval, and whatever is finished
// is committed before waiting for the next batch and when stopping, for a
// fatal error too.
func (r *Reader) work(ctx context.Context, batches <-chan []*kgo.Record, h Handler) error {
	c := &committer{interval: r.cfg.commitInterval, quiet: r.cfg.quietInterval, commit: r.commit}
	for {
		var recs []*kgo.Record
		var ok bool
		select {
		case recs, ok = <-batches:
		default:
			// Nothing more to handle yet: an idle partition keeps
			// nothing uncommitted, or, when what it holds had no
			// effect, nothing past the quiet interval.
			var err error
			if recs, ok, err = c.idle(ctx, batches); err != nil {
				return err
			}
		}
		if !ok {
			return c.flush(ctx)
		}
		for i, rec := range recs {
			// A finished record is let go: a record keeps its
			// whole batch alive (its slab of records, and the
			// decompressed bytes they lie in), and the worker must
			// not hold the batches before the one it is at.
			recs[i] = nil
			effect, err := r.handle(ctx, rec, h)
			if err != nil {
				if cerr := c.flush(ctx); cerr != nil {
					return errors.Join(err, cerr)
				}
				return err
			}
			if err := c.finished(ctx, rec, effect); err != nil {
				return err
			}
		}
	}
}

// committer holds the position of one partition's last finished record
// until it is committed. It is used by that partition's worker only. It
// keeps the position only, not the record: the record would keep its
// whole batch alive until the commit, a quiet interval after the last
// record that had an effect.
type committer struct {
	interval, quiet time.Duration
	commit          func(context.Context, *kgo.Record) error
	done            *kgo.Record // position of the record finished and not committed yet: topic, partition, offset, leader epoch
	effect          bool        // a record finished since the last commit had an effect
	last            time.Time   // when the last commit ended
}

// finished records rec as done and commits it if no commit was made in the
// last interval, or, while nothing finished since had an effect, in the
// last quiet interval.
func (c *committer) finished(ctx context.Context, rec *kgo.Record, effect bool) error {
	c.done = &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, LeaderEpoch: rec.LeaderEpoch}
	c.effect = c.effect || effect
	if since := time.Since(c.last); since < c.interval || (!c.effect && since < c.quiet) {
		return nil
	}
	return c.flush(ctx)
}

// idle commits what is finished and waits for the next batch; what had no
// effect it commits once the quiet interval since the last commit is up,
// unless a batch comes first.
func (c *committer) idle(ctx context.Context, batches <-chan []*kgo.Record) ([]*kgo.Record, bool, error) {
	if c.done != nil && !c.effect {
		if wait := c.quiet - time.Since(c.last); wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case recs, ok := <-batches:
				return recs, ok, nil
			case <-t.C:
			}
		}
	}
	if err := c.flush(ctx); err != nil {
		return nil, false, err
	}
	recs, ok := <-batches
	return recs, ok, nil
}

// flush commits the last finished record, if there is one. The commit does
// not end with ctx, so that a stop does not lose finished work.
func (c *committer) flush(ctx context.Context) error {
	if c.done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.commit(ctx, c.done); err != nil {
		return err
	}
	c.done, c.effect, c.last = nil, false, time.Now()
	return nil
}

// startOffsets returns where each partition starts: its committed offset, or
// cfg.start. A committed offset below the partition's first offset means
// records were deleted unread; those partitions start at their first offset
// and are returned as data loss.
func (r *Reader) startOffsets(ctx context.Context) (map[int32]kgo.Offset, []*kgo.ErrDataLoss, error) {
	parts := slices.Clone(r.cfg.partitions)
	if len(parts) == 0 {
		td, err := r.adm.ListTopics(ctx, r.cfg.topic)
		if err != nil {
			return nil, nil, fmt.Errorf("reader: list topic %s: %w", r.cfg.topic, err)
		}
		t, ok := td[r.cfg.topic]
		if !ok || t.Err != nil {
			return nil, nil, fmt.Errorf("reader: topic %s: %w", r.cfg.topic, errors.Join(t.Err, errors.New("not found")))
		}
		parts = t.Partitions.Numbers()
	}
	// A topic created a moment ago may not be known to every broker yet
	// (UNKNOWN_TOPIC_OR_PARTITION is retriable): wait for it.
	// Only the partitions read: an agent reads one, and a listing of all
	// would open a connection to every broker that leads one.
	var first map[int32]int64
	err := r.retry(ctx, func(ctx context.Context) error {
		var err error
		first, err = ListOffsets(ctx, r.client, r.cfg.topic, parts, ListStart, false)
		return classify(err)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reader: start offsets of %s: %w", r.cfg.topic, err)
	}
	committed, err := r.committed(ctx, parts)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[int32]kgo.Offset, len(parts))
	var lost []*kgo.ErrDataLoss
	for _, p := range parts {
		out[p] = r.cfg.start
		o, ok := committed.Lookup(r.cfg.topic, p)
		if !ok || o.Err != nil || o.At < 0 {
			continue
		}
		out[p] = kgo.NewOffset().At(o.At).WithEpoch(o.LeaderEpoch)
		if f := first[p]; o.At < f {
			out[p] = kgo.NewOffset().At(f)
			lost = append(lost, &kgo.ErrDataLoss{Topic: r.cfg.topic, Partition: p, ConsumedTo: o.At,
				ConsumedToEpoch: o.LeaderEpoch, ResetTo: f, ResetToEpoch: -1})
		}
	}
	return out, lost, nil
}

// committed returns the committed offsets of parts: those of the group,
// or of the offset store.
func (r *Reader) committed(ctx context.Context, parts []int32) (kadm.OffsetResponses, error) {
	var committed kadm.OffsetResponses
	if r.cfg.offsets != nil {
		err := r.retry(ctx, func(ctx context.Context) error {
			stored, err := r.cfg.offsets.Offsets(ctx, r.cfg.topic, parts)
			committed = kadm.OffsetResponses{}
			for p, at := range stored {
				committed.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: r.cfg.topic, Partition: p, At: at, LeaderEpoch: -1}})
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reader: stored offsets of %s: %w", r.cfg.topic, err)
		}
		return committed, nil
	}
	// The group coordinator may not be up yet on a fresh cluster.
	err := r.retry(ctx, func(ctx context.Context) error {
		var err error
		committed, err = r.adm.FetchOffsets(ctx, r.cfg.group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			// A group that never committed: some brokers say so rather
			// than answer with no offsets.
			committed, err = nil, nil
		}
		return classify(err)
	})
	if err != nil {
		return nil, fmt.Errorf("reader: fetch offsets of group %s: %w", r.cfg.group, err)
	}
	return committed, nil
}

// handle takes one record through the intake and handles it,
// dead-lettering it if it is poison.
func (r *Reader) handle(ctx context.Context, rec *kgo.Record, h Handler) (effect bool, err error) {
	if r.cfg.skip != nil && r.cfg.skip(rec) {
		return false, nil
	}
	d, err := r.in.Take(ctx, rec)
	if err != nil {
		if !IsPoison(err) {
			return false, err // ctx ended
		}
		if r.cfg.onRefused != nil {
			cause := err
			if err := r.retry(ctx, func(ctx context.Context) error { return r.cfg.onRefused(ctx, rec, cause) }); err != nil && !IsPoison(err) {
				return false, err
			}
		}
		return true, r.refuse(ctx, rec, err)
	}
	if d == nil {
		return false, nil // a transaction marker
	}
	return true, r.process(ctx, rec, d, h)
}

// process runs h on d, the event rec holds, in a span that continues the
// event's trace.
func (r *Reader) process(ctx context.Context, rec *kgo.Record, d *Decoded, h Handler) error {
	ctx, span := r.tracer.Start(ContextWithTrace(ctx, d), "events.process "+d.Spec.Type,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.destination.name", rec.Topic),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(int(rec.Partition))),
			attribute.Int64("messaging.kafka.offset", rec.Offset),
			attribute.String("cloudevents.event_id", d.Event.ID())))
	defer span.End()
	err := r.retry(ctx, func(ctx context.Context) error { return call(ctx, h, d) })
	switch {
	case err == nil:
		countType(ctx, r.inst.processed, d.Spec.Type)
		return nil
	case IsPoison(err):
		span.SetStatus(codes.Error, err.Error())
		return r.refuse(ctx, rec, err)
	}
	span.SetStatus(codes.Error, err.Error())
	return err
}

// call runs the handler, turning a panic into a poison error.
func call(ctx context.Context, h Handler, d *Decoded) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Poison(fmt.Errorf("handler panicked: %v", p))
		}
	}()
	return h(ctx, d)
}

// refuse dead-letters rec, retrying until the dead letter is durable.
func (r *Reader) refuse(ctx context.Context, rec *kgo.Record, cause error) error {
	return r.retry(ctx, func(ctx context.Context) error {
		return classify(r.in.Refuse(ctx, Rejected{Record: rec, Cause: cause}))
	})
}

// classify marks Kafka errors that retrying cannot fix (authorization, an
// invalid request) as fatal.
func classify(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return Fatal(err)
	}
	return err
}

// retry runs f until it succeeds, fails fatally or with poison, or ctx ends,
// backing off between attempts.
func (r *Reader) retry(ctx context.Context, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil || IsFatal(err) || IsPoison(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.WarnContext(ctx, "retrying", "in", wait, "err", err)
		count(ctx, r.inst.retries)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, r.cfg.maxBackoff)
	}
}

// commit stores the offset after rec for rec's partition and tells
// OnCommit.
func (r *Reader) commit(ctx context.Context, rec *kgo.Record) error {
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: rec.Topic, Partition: rec.Partition, At: rec.Offset + 1, LeaderEpoch: rec.LeaderEpoch})
	err := r.retry(ctx, func(ctx context.Context) error {
		if r.cfg.offsets != nil {
			return r.cfg.offsets.Commit(ctx, rec.Topic, rec.Partition, rec.Offset+1)
		}
		resp, err := r.adm.CommitOffsets(ctx, r.cfg.group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return classify(fmt.Errorf("commit offsets: %w", err))
		}
		return nil
	})
	if err == nil && r.cfg.onCommit != nil {
		r.cfg.onCommit(rec.Partition, rec.Offset+1)
	}
	return err
}
