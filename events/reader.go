package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
// records since the last commit are delivered again. Its error decides what
// happens to the record:
//   - nil: done; the offset is committed after the rest of the batch.
//   - Poison(err): dead-lettered with the error, then done.
//   - Fatal(err): Run stops and returns err; nothing is committed.
//   - any other error: retried with backoff until it succeeds or ctx ends.
type Handler func(ctx context.Context, d *Decoded) error

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// Topic to read.
	Topic string
	// Partitions to read by direct assignment; empty means all of them.
	Partitions []int32
	// Group names where offsets are committed. The reader does not join the
	// group; it only stores offsets there.
	Group string
	// Start is where to begin a partition with no committed offset; the zero
	// value means the earliest offset.
	Start kgo.Offset
	// Skip, if set, is asked first about every record; true means the record
	// is not for this reader (another cluster sharing the partition) and is
	// passed over without decoding.
	Skip func(*kgo.Record) bool
	// MaxBackoff caps the wait between retries of a failing handler.
	MaxBackoff time.Duration
}

// Reader consumes partitions by direct assignment, decodes each record, runs
// a handler, dead-letters poison records and commits offsets after the
// handler's effect is done. Partitions are processed concurrently, each in
// order by one goroutine.
type Reader struct {
	client *kgo.Client
	adm    *kadm.Client
	dec    *Decoder
	dlq    *DeadLetter
	cfg    ReaderConfig
	log    *slog.Logger
}

// NewReader returns a reader. client must not be in a consumer group: the
// reader adds its partitions to it directly. It should use ReaderOpts.
func NewReader(client *kgo.Client, dec *Decoder, dlq *DeadLetter, log *slog.Logger, cfg ReaderConfig) (*Reader, error) {
	if cfg.Topic == "" || cfg.Group == "" {
		return nil, errors.New("reader: topic and group are required")
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Start == (kgo.Offset{}) {
		cfg.Start = kgo.NewOffset().AtStart()
	}
	return &Reader{client: client, adm: kadm.NewClient(client), dec: dec, dlq: dlq, cfg: cfg, log: log}, nil
}

// ReaderOpts are client options for a Reader's client: on an out-of-range
// offset (data loss, retention) restart at the earliest offset rather than
// franz-go's default of one minute back.
func ReaderOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

// Run reads until ctx ends (then it returns nil) or a fatal error.
func (r *Reader) Run(ctx context.Context, h Handler) error {
	start, err := r.startOffsets(ctx)
	if err != nil {
		return err
	}
	r.client.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: start})
	defer r.client.RemoveConsumePartitions(map[string][]int32{r.cfg.Topic: mapKeys(start)})
	for {
		fetches := r.client.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("reader: kafka client closed")
		}
		fetches.EachError(func(t string, p int32, err error) {
			r.log.WarnContext(ctx, "fetch failed", "topic", t, "partition", p, "err", err)
		})
		done, err := r.process(ctx, fetches, h)
		// Commit what was fully handled, even when stopping: a graceful
		// stop or a fatal error must not redo finished work.
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		cerr := r.commit(commitCtx, done)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			return errors.Join(err, cerr)
		case cerr != nil:
			return cerr
		case ctx.Err() != nil:
			return nil
		}
	}
}

func mapKeys(m map[int32]kgo.Offset) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (r *Reader) startOffsets(ctx context.Context) (map[int32]kgo.Offset, error) {
	parts := slices.Clone(r.cfg.Partitions)
	if len(parts) == 0 {
		td, err := r.adm.ListTopics(ctx, r.cfg.Topic)
		if err != nil {
			return nil, fmt.Errorf("reader: list topic %s: %w", r.cfg.Topic, err)
		}
		t, ok := td[r.cfg.Topic]
		if !ok || t.Err != nil {
			return nil, fmt.Errorf("reader: topic %s: %w", r.cfg.Topic, errors.Join(t.Err, errors.New("not found")))
		}
		parts = t.Partitions.Numbers()
	}
	// The group coordinator may not be up yet on a fresh cluster.
	var committed kadm.OffsetResponses
	err := r.retry(ctx, func(ctx context.Context) error {
		var err error
		committed, err = r.adm.FetchOffsets(ctx, r.cfg.Group)
		if err != nil && !kerr.IsRetriable(err) {
			return Fatal(err)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reader: fetch offsets of group %s: %w", r.cfg.Group, err)
	}
	out := make(map[int32]kgo.Offset, len(parts))
	for _, p := range parts {
		out[p] = r.cfg.Start
		if o, ok := committed.Lookup(r.cfg.Topic, p); ok && o.Err == nil && o.At >= 0 {
			out[p] = kgo.NewOffset().At(o.At).WithEpoch(o.LeaderEpoch)
		}
	}
	return out, nil
}

// process runs every partition of the fetch in its own goroutine and returns
// the offsets to commit.
func (r *Reader) process(ctx context.Context, fetches kgo.Fetches, h Handler) (kadm.Offsets, error) {
	g, gctx := errgroup.WithContext(ctx)
	var parts []kgo.FetchTopicPartition
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) > 0 {
			parts = append(parts, p)
		}
	})
	next := make([]kadm.Offset, len(parts))
	for i, p := range parts {
		g.Go(func() error {
			for _, rec := range p.Records {
				if err := r.handle(gctx, rec, h); err != nil {
					return err
				}
				next[i] = kadm.Offset{Topic: rec.Topic, Partition: rec.Partition, At: rec.Offset + 1, LeaderEpoch: rec.LeaderEpoch}
			}
			return nil
		})
	}
	err := g.Wait()
	offs := make(kadm.Offsets)
	for _, o := range next {
		if o.Topic != "" {
			offs.Add(o)
		}
	}
	return offs, err
}

func (r *Reader) handle(ctx context.Context, rec *kgo.Record, h Handler) error {
	if r.cfg.Skip != nil && r.cfg.Skip(rec) {
		return nil
	}
	d, err := r.dec.Decode(ctx, rec)
	if err != nil {
		r.log.WarnContext(ctx, "dead-lettering record", "topic", rec.Topic, "partition", rec.Partition,
			"offset", rec.Offset, "reason", Reason(err), "err", err)
		return r.retry(ctx, func(ctx context.Context) error { return r.dlq.Send(ctx, rec, err) })
	}
	ctx, span := tracer().Start(ContextWithTrace(ctx, d), "events.process "+d.Spec.Type,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.destination.name", rec.Topic),
			attribute.Int("messaging.destination.partition.id", int(rec.Partition)),
			attribute.Int64("messaging.kafka.offset", rec.Offset),
			attribute.String("cloudevents.event_id", d.Event.ID())))
	defer span.End()
	return r.retry(ctx, func(ctx context.Context) error {
		err := h(ctx, d)
		if err == nil {
			countType(ctx, meters().processed, d.Spec.Type)
		}
		if err == nil || IsFatal(err) || !IsPoison(err) {
			return err
		}
		span.SetStatus(codes.Error, err.Error())
		r.log.WarnContext(ctx, "handler refused event; dead-lettering", "type", d.Spec.Type, "id", d.Event.ID(), "err", err)
		return r.dlq.Send(ctx, rec, err)
	})
}

// retry runs f until it succeeds, fails fatally or ctx ends, backing off
// between attempts.
func (r *Reader) retry(ctx context.Context, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil || IsFatal(err) {
			return err
		}
		r.log.WarnContext(ctx, "retrying", "in", wait, "err", err)
		if c := meters().retries; c != nil {
			c.Add(ctx, 1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, r.cfg.MaxBackoff)
	}
}

func (r *Reader) commit(ctx context.Context, offs kadm.Offsets) error {
	if len(offs) == 0 {
		return nil
	}
	return r.retry(ctx, func(ctx context.Context) error {
		resp, err := r.adm.CommitOffsets(ctx, r.cfg.Group, offs)
		if err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		return nil
	})
}
