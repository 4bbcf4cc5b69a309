package spoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
)

// bootstrapKey is the state record of a finished bootstrap.
const bootstrapKey = "bootstrap"

// Bootstrap brings a new or wiped spoke to its cluster's whole desired state
// in the time it takes to read the cluster's current objects, however long
// the config topic's history is.
//
// It reads the cluster's partition of the compacted desired-state topic
// (written by the hub in the same transaction as each config event, see
// events.ConfigWriter), applies the latest event of every object through
// Handle in config order, as if read from the config topic at the offset it
// copies, and then moves the spoke's config checkpoint past them. The
// config reader takes over from there. A bootstrap interrupted part way is
// done again, and the objects it had applied are acknowledged again as
// redeliveries. It runs once: its end is recorded in the state store.
type Bootstrap struct {
	cluster   string
	client    *kgo.Client
	conn      []kgo.Opt
	topics    events.Topics
	partition int32
	offsets   *offsets
	in        *events.Intake
	state     StateStore
	handle    events.Handler
	log       *slog.Logger
}

// newBootstrap returns the bootstrap of cluster's config partition. It
// moves the config offset the agent keeps in state past what it applies;
// group is where an older agent committed it (see offsets). It uses
// client for admin requests and makes its own
// short-lived consumers with conn; it takes records through in (which
// waits while the keys are behind them) and hands each event to handle,
// the config reader's handler. It takes the WithTopics and WithLogger
// options.
func newBootstrap(cluster string, client *kgo.Client, conn []kgo.Opt, partition int32, group string,
	in *events.Intake, state StateStore, handle events.Handler, opts ...Option) (*Bootstrap, error) {
	if cluster == "" || client == nil || partition < 0 || group == "" || in == nil || state == nil || handle == nil {
		return nil, errors.New("bootstrap: a cluster, a client, a partition, a group, an intake, a state store and a handler are required")
	}
	o := newOptions(opts)
	return &Bootstrap{cluster: cluster, client: client, conn: conn, topics: o.topics, partition: partition,
		offsets: newOffsets(state, kadm.NewClient(client), group, o.topics[events.TopicConfig], partition),
		in:      in, state: state, handle: handle, log: o.Log}, nil
}

// ErrNoDesiredTopic means the desired-state topic does not exist (a
// deployment from before it): the spoke then reads the config topic's whole
// history instead, which reaches the same state, only slower.
var ErrNoDesiredTopic = errors.New("no desired-state topic")

// Run bootstraps unless it was done before, and returns the number of
// objects applied. It records that it started before it applies anything:
// a bootstrap cut short (a crash, a stop) runs again on the next start,
// and only then can the agent's state hold an object the snapshot has
// since deleted. A new cluster has nothing to delete, and its bootstrap
// reads nothing from the state for the snapshot's deletions.
func (b *Bootstrap) Run(ctx context.Context) (int, error) {
	rec, resumed, err := b.state.Get(ctx, bootstrapKey)
	if err != nil || (resumed && !rec.Pending) {
		return 0, err
	}
	started := time.Now()
	latest, last, lastEvent, err := b.read(ctx)
	if err == nil && lastEvent != nil {
		err = b.confirm(ctx, lastEvent)
	}
	if errors.Is(err, ErrNoDesiredTopic) || errors.Is(err, ErrSnapshotMismatch) {
		b.log.ErrorContext(ctx, "not bootstrapping; reading the config topic's whole history instead", "err", err)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !resumed {
		if err := b.state.Put(ctx, bootstrapKey, Applied{Partition: b.partition, Offset: -1, Pending: true}); err != nil {
			return 0, err
		}
	}
	latest, err = b.liveOrHeld(ctx, latest, resumed)
	if err != nil {
		return 0, err
	}
	if err := b.applyInOrder(ctx, latest); err != nil {
		return 0, err
	}
	if last >= 0 {
		if err := retry(ctx, b.log, "bootstrap: checkpoint", transient, func() error { return b.checkpoint(ctx, last+1) }); err != nil {
			return 0, err
		}
	}
	if err := b.state.Put(ctx, bootstrapKey, Applied{Partition: b.partition, Offset: last}); err != nil {
		return 0, err
	}
	b.log.InfoContext(ctx, "bootstrapped from the desired-state topic", "objects", len(latest), "resumed", resumed,
		"next_config_offset", last+1, "took", time.Since(started).Round(time.Millisecond))
	return len(latest), nil
}

// liveOrHeld drops the deletions of latest, but for those of objects the
// agent's state holds when the bootstrap resumes one cut short.
func (b *Bootstrap) liveOrHeld(ctx context.Context, latest []placed, resumed bool) ([]placed, error) {
	out := latest[:0]
	for _, p := range latest {
		if key, deletion := objectKey(p.d); deletion {
			if !resumed {
				continue
			}
			rec, ok, err := b.state.Get(ctx, key)
			if err != nil {
				return nil, err
			}
			if !ok || rec.Deleted {
				continue
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// applyInOrder applies events in config-offset order, as the config reader
// would have.
func (b *Bootstrap) applyInOrder(ctx context.Context, ps []placed) error {
	slices.SortFunc(ps, func(x, y placed) int { return int(x.d.Offset - y.d.Offset) })
	for _, p := range ps {
		if err := b.apply(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// read returns the latest desired-state event of each of the cluster's
// objects (a deletion included), each placed at the config offset it
// copies, and the last config offset the snapshot covers and its event
// (-1 and nil for none). A record that does not verify is logged and left
// out: the config topic holds the original.
func (b *Bootstrap) read(ctx context.Context) ([]placed, int64, *events.Decoded, error) {
	byKey, err := b.latest(ctx)
	if err != nil {
		return nil, -1, nil, err
	}
	var out []placed
	last := int64(-1)
	var lastEvent *events.Decoded
	for k, r := range byKey {
		if r.Value == nil {
			continue // a tombstone: the object is long gone
		}
		d, err := b.place(ctx, r)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, -1, nil, ctxErr
		}
		if err != nil {
			b.log.WarnContext(ctx, "bootstrap: desired-state record refused; the config topic decides", "key", k, "err", err)
			continue
		}
		if d.Offset > last {
			last, lastEvent = d.Offset, d
		}
		out = append(out, placed{d, r})
	}
	return out, last, lastEvent, nil
}

// latest reads the cluster's partition of the desired-state topic to its
// last stable offset and returns the latest record of each of the
// cluster's keys.
func (b *Bootstrap) latest(ctx context.Context) (map[string]*kgo.Record, error) {
	topic := b.topics[events.TopicDesired]
	ranges, err := events.PlanRanges(ctx, kadm.NewClient(b.client), []string{topic}, events.Bounds{})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("bootstrap: %w: %s", ErrNoDesiredTopic, topic)
	}
	if err != nil {
		return nil, fmt.Errorf("bootstrap: end of %s: %w", topic, err)
	}
	ranges = slices.DeleteFunc(ranges, func(r events.Range) bool { return r.Partition != b.partition })
	if len(ranges) == 0 {
		return nil, fmt.Errorf("bootstrap: end of %s/%d: not listed", topic, b.partition)
	}
	cl, err := kgo.NewClient(append(slices.Clone(b.conn), events.RangeConsumeOpts()...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	reader, err := events.NewRangeReader(cl, ranges)
	if err != nil {
		return nil, err
	}
	prefix := b.cluster + "/"
	byKey := map[string]*kgo.Record{}
	for {
		recs, err := reader.Poll(ctx, 0)
		switch {
		case errors.Is(err, io.EOF):
			return byKey, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, fmt.Errorf("bootstrap: read %s: %w", topic, err)
		}
		for _, r := range recs {
			if k := string(r.Key); !r.Attrs.IsControl() && strings.HasPrefix(k, prefix) {
				byKey[k] = r
			}
		}
	}
}

// confirm checks that the config record at the offset a desired-state
// record names is the same event. The offset header is not signed: without
// this check, a forged header could move the spoke's checkpoint past config
// events it never applied. A record the config topic no longer holds
// (retention deleted it) cannot be checked, and need not be: nothing at or
// below its offset can be read any more, so the checkpoint skips nothing.
// An offset at or past the topic's end is refused.
func (b *Bootstrap) confirm(ctx context.Context, d *events.Decoded) error {
	topic := b.topics[events.TopicConfig]
	start, err := events.ListOffset(ctx, b.client, topic, b.partition, events.ListStart, false)
	end, err2 := events.ListOffset(ctx, b.client, topic, b.partition, events.ListEnd, false)
	if err := errors.Join(err, err2); err != nil {
		return fmt.Errorf("bootstrap: offsets of %s: %w", topic, err)
	}
	switch {
	case d.Offset >= end:
		return fmt.Errorf("bootstrap: %w: the desired-state copy of event %s names config offset %d, past the end of %s/%d (%d)",
			ErrSnapshotMismatch, d.Event.ID(), d.Offset, topic, b.partition, end)
	case d.Offset < start:
		b.log.InfoContext(ctx, "bootstrap: the config record of the snapshot's last change is gone; nothing before it can be read",
			"offset", d.Offset, "first_available", start)
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(b.conn),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {b.partition: kgo.NewOffset().At(d.Offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("bootstrap: read %s/%d@%d: %w", topic, b.partition, d.Offset, err)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if recs[0].Offset != d.Offset || eventID(recs[0]) != d.Event.ID() {
			return fmt.Errorf("bootstrap: %w: the desired-state copy of event %s names config offset %d, which holds another record",
				ErrSnapshotMismatch, d.Event.ID(), d.Offset)
		}
		return nil
	}
}

// Recover applies what the config partition lost before the agent read
// it: records were deleted (retention, a truncation) between config
// offsets from and to. The compacted desired-state topic still holds the
// latest copy of every object, deletions included, each naming the config
// offset it copies; Recover applies those whose offset is in the lost
// range, in offset order, as the config reader would have, and returns how
// many it applied. Copies from before or after the range are the config
// reader's: it applied them, or will. The applier's order checks hold, so
// nothing older than what was applied is ever put back.
func (b *Bootstrap) Recover(ctx context.Context, from, to int64) (int, error) {
	latest, _, _, err := b.read(ctx)
	if err != nil {
		return 0, err
	}
	latest = slices.DeleteFunc(latest, func(p placed) bool { return p.d.Offset < from || p.d.Offset >= to })
	if err := b.applyInOrder(ctx, latest); err != nil {
		return 0, err
	}
	b.log.InfoContext(ctx, "recovered lost config records from the desired-state topic", "objects", len(latest), "from", from, "to", to)
	return len(latest), nil
}

// ErrSnapshotMismatch means the desired-state topic does not match the
// config topic; the spoke then reads the config topic's history instead.
var ErrSnapshotMismatch = errors.New("desired state does not match the config topic")

// eventID is the CloudEvents id of a binary-mode record, unverified.
func eventID(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "ce_id" {
			return string(h.Value)
		}
	}
	return ""
}

func (b *Bootstrap) place(ctx context.Context, r *kgo.Record) (*events.Decoded, error) {
	off, err := events.ConfigOffset(r)
	if err != nil {
		return nil, err
	}
	d, err := b.in.Take(ctx, r)
	if err != nil {
		return nil, err
	}
	d.Topic, d.Partition, d.Offset = b.topics[events.TopicConfig], b.partition, off
	return d, nil
}

// placed is a desired-state record and its event, placed at the config
// offset it copies.
type placed struct {
	d   *events.Decoded
	rec *kgo.Record
}

// apply hands one event to the handler as the config reader would. An
// event the handler refuses (it acknowledged it as rejected) is
// dead-lettered and passed over, so one bad object never stalls a
// bootstrap; a fatal error stops it; anything else is retried.
func (b *Bootstrap) apply(ctx context.Context, p placed) error {
	err := retry(ctx, b.log, "bootstrap: apply "+p.d.Event.ID(), func(err error) bool { return !events.IsPoison(err) && !events.IsFatal(err) },
		func() error { return b.handle(ctx, p.d) })
	if !events.IsPoison(err) {
		return err
	}
	return retry(ctx, b.log, "bootstrap: dead-letter "+p.d.Event.ID(), func(error) bool { return true },
		func() error { return b.in.Refuse(ctx, events.Rejected{Record: p.rec, Cause: err}) })
}

// retry runs fn until it succeeds, ctx ends or it fails in a way
// transient does not accept, with exponential backoff up to 30 s.
func retry(ctx context.Context, log *slog.Logger, what string, transient func(error) bool, fn func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) {
			return err
		}
		log.WarnContext(ctx, what+" failed; will retry", "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// transient reports whether retrying may fix err: anything but a Kafka
// error that says it may not (authorization, say).
func transient(err error) bool {
	var ke *kerr.Error
	return !errors.As(err, &ke) || ke.Retriable
}

// checkpoint moves the spoke's config offset to next, unless it is already
// further.
func (b *Bootstrap) checkpoint(ctx context.Context, next int64) error {
	if err := b.offsets.advance(ctx, next); err != nil {
		return fmt.Errorf("bootstrap: checkpoint: %w", err)
	}
	return nil
}
