package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
)

// pending is one event a write appends, with the ledger entry it makes
// (nil for an operation, which is no object's state), and the trust
// events that go in its transaction: the keys a registration names, and
// the rotations and revocations it makes. They reach the log only if the
// change does.
type pending struct {
	key        string
	event      *event.Event
	entry      *entry
	placement  *placement
	generation int64
	trust      []*event.Event
}

// decision builds the events of a write from the ledger as it stands once
// the partition has been read to its end. It runs under the partition's
// lock, so no other write on this replica decides in between; an error
// (a conflict, say) writes nothing.
type decision func(ctx context.Context) ([]pending, error)

// writer appends config events. Each config partition has one
// transactional id, shared by every hub replica: a replica that writes to
// a partition first initializes its producer id, which fences whichever
// replica wrote there before (its open transaction is aborted and its next
// commit fails), then reads the partition to its last stable offset and
// only then decides. A decision is therefore taken on the whole log, and a
// replica whose decision was overtaken cannot commit it. docs/hub.md says
// more.
type writer struct {
	conn       []kgo.Opt
	clientOpts func(name string) []kgo.Opt
	signer     *events.Signer
	topics     events.Topics
	txnPrefix  string
	ledger     *ledger
	adm        *kadm.Client
	eventOpts  []events.Option

	mu     sync.Mutex
	owners map[string]*owner
}

// lane is what one transactional id writes: a config partition (and the
// same partition of the desired-state topic), or the placements topic.
type lane struct {
	id        string
	partition int32
	roles     []events.Topic
}

func configLane(p int32) lane {
	return lane{id: strconv.Itoa(int(p)), partition: p, roles: []events.Topic{events.TopicConfig, events.TopicDesired}}
}

var placementsLane = lane{id: "placements", partition: 0, roles: []events.Topic{events.TopicPlacements}}

// owner is this replica's hold on one lane.
type owner struct {
	lane
	mu     sync.Mutex // one decision and write at a time
	client *kgo.Client
	cw     *events.ConfigWriter
	synced bool
}

// maxFencedRetries bounds how often a write is decided again after another
// replica took its partition in the middle.
const maxFencedRetries = 5

// fencedBackoff is the longest first wait before a write fenced by another
// replica takes the partition back; it doubles with each attempt. The wait
// is drawn at random below it, so that two replicas writing to one
// partition at once do not take it from each other in step, attempt after
// attempt, until both give up (TestConcurrentConflictingWritesOneWins).
const fencedBackoff = 20 * time.Millisecond

// ErrBusy means another replica kept taking the partition while a write
// was being decided: nothing was written, and the request may be retried.
var ErrBusy = errors.New("hub: another replica is writing to the same partition; nothing was written, retry")

// ErrUnsettled means the broker answered every attempt's commit with an
// error that does not say whether it committed (UNKNOWN_SERVER_ERROR while
// replicas fence each other): the write may be in the log. A retry with
// the same idempotency key answers with it if it is, and decides anew if
// not.
var ErrUnsettled = errors.New("hub: the broker did not say whether the write committed; retry with the same idempotency key")

func (w *writer) owner(l lane) *owner {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.owners[l.id]
	if !ok {
		o = &owner{lane: l}
		w.owners[l.id] = o
	}
	return o
}

// write decides and appends, with extra (the call's audit record) in the
// same transaction, and returns the config records once they are durable.
func (w *writer) write(ctx context.Context, l lane, decide decision, extra func([]pending) ([]*event.Event, error)) ([]pending, []*kgo.Record, error) {
	o := w.owner(l)
	o.mu.Lock()
	defer o.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := w.sync(ctx, o); err != nil {
			return nil, nil, err
		}
		ps, err := decide(ctx)
		if err != nil || len(ps) == 0 {
			return nil, nil, err
		}
		es := make([]*event.Event, 0, len(ps)+1)
		for _, p := range ps {
			es = append(es, p.event)
		}
		// After every change's own event, so that record i is ps[i]'s.
		for _, p := range ps {
			es = append(es, p.trust...)
		}
		if extra != nil {
			more, err := extra(ps)
			if err != nil {
				return nil, nil, err
			}
			es = append(es, more...)
		}
		recs, err := o.cw.Write(ctx, es...)
		if err == nil {
			w.ledger.recorded(ps, recs)
			return ps, recs, nil
		}
		if errors.Is(err, events.ErrOversized) {
			// Refused as it was encoded, before any transaction began:
			// the lane is still this replica's, and deciding again would
			// make the same event.
			return nil, nil, err
		}
		w.release(o)
		// Fenced, nothing of the transaction was committed. Otherwise (the
		// broker answered the commit with an error it does not explain,
		// say) it may have been: the next attempt fences this lane's
		// transactional id, reads the partition to its end and decides
		// again, and finds the call's events there if they were.
		if ctx.Err() != nil || attempt >= maxFencedRetries {
			switch {
			case fenced(err):
				return nil, nil, fmt.Errorf("%w: %w", ErrBusy, err)
			case errors.Is(err, kerr.UnknownServerError):
				return nil, nil, fmt.Errorf("%w: %w", ErrUnsettled, err)
			}
			return nil, nil, err
		}
		if err := sleep(ctx, rand.N(fencedBackoff<<attempt)); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrBusy, err)
		}
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sync makes this replica the partition's writer and reads the partition
// to its end, unless it already is and has.
func (w *writer) sync(ctx context.Context, o *owner) error {
	if o.synced {
		return nil
	}
	if o.client == nil {
		opts := slices.Concat(w.conn, events.ProducerOpts(nil), w.clientOpts("hub-writer-"+o.id),
			[]kgo.Opt{kgo.TransactionalID(w.txnPrefix + o.id),
				kgo.RecordPartitioner(ownedPartition(o.partition))})
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("hub: writer of lane %s: %w", o.id, err)
		}
		cw, err := events.NewConfigWriter(cl, w.signer, w.topics, w.eventOpts...)
		if err != nil {
			cl.Close()
			return err
		}
		o.client, o.cw = cl, cw
	}
	// Initializing the producer id fences the previous holder of the
	// transactional id and ends its open transaction, if any.
	if _, _, err := o.client.ProducerID(ctx); err != nil {
		w.release(o)
		return fmt.Errorf("hub: taking lane %s: %w", o.id, err)
	}
	ends := map[string]map[int32]int64{}
	for _, role := range o.roles {
		t := w.topics[role]
		listed, err := w.adm.ListCommittedOffsets(ctx, t)
		if err != nil {
			return fmt.Errorf("hub: end of %s: %w", t, err)
		}
		end, ok := listed.Lookup(t, o.partition)
		if !ok || end.Err != nil {
			return fmt.Errorf("hub: end of %s/%d: %w", t, o.partition, errors.Join(end.Err, errors.New("not listed")))
		}
		ends[t] = map[int32]int64{o.partition: end.Offset}
	}
	if err := w.ledger.wait(ctx, ends); err != nil {
		return err
	}
	o.synced = true
	return nil
}

// release drops the partition's client: the next write takes the
// partition again.
func (w *writer) release(o *owner) {
	if o.client != nil {
		o.client.Close()
	}
	o.client, o.cw, o.synced = nil, nil, false
}

// close releases every partition.
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.owners {
		o.mu.Lock()
		w.release(o)
		o.mu.Unlock()
	}
}

// fenced reports whether err says another producer took the transactional
// id, and so ended this one's transaction: the coordinator answers a commit
// of a transaction another producer's initialization aborted with
// INVALID_TXN_STATE rather than a fencing error when the abort is under
// way. Nothing of the transaction is committed either way.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.TransactionAbortable) ||
		errors.Is(err, kerr.InvalidTxnState)
}

// ownedPartition puts every record a partition's writer produces on that
// partition: the config and desired-state topics have the same number of
// partitions and a cluster's records share a number on both. A topic with
// one partition (the audit topic) gets partition 0.
type ownedPartition int32

func (p ownedPartition) ForTopic(string) kgo.TopicPartitioner { return p }
func (p ownedPartition) RequiresConsistency(*kgo.Record) bool { return true }
func (p ownedPartition) Partition(_ *kgo.Record, n int) int {
	if n == 1 {
		return 0
	}
	return int(p)
}
