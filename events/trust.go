package events

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TrustFollower keeps a following Registry up to date with the trust topic:
// it reads the topic's one partition from the start, applies every key event
// its intake accepts, and advances the registry's coverage whenever it has
// read to the end, so that readers of other topics judge each record by the
// keys that were valid at its log time (they wait in Intake.Take until
// then).
type TrustFollower struct {
	client *kgo.Client
	topic  string
	in     *Intake
	reg    *Registry
	log    *slog.Logger
	margin time.Duration
	owners map[string]bool // nil: all

	// fetches is what Run polls: client, or client's share of a Demux.
	fetches FetchSource
}

// NewTrustFollower returns a follower of topic, the trust topic, that
// feeds reg. client must consume the topic's partition 0 from the start
// (see TrustConsumeOpts), and nothing else unless the follower polls its
// share of a Demux of client (WithFetchSource). Only trust anchors sign trust
// events, so in decodes against reg.Anchors(), which covers every log
// time, never against reg itself, which covers a time only once this
// follower has read past it. It takes the WithLogger, WithTrustOwners,
// WithFetchSource and WithClockMargin options: when the follower has read to the end, it
// advances the registry to the local clock less the margin, for the
// broker's clock to be behind ours.
func NewTrustFollower(client *kgo.Client, topic string, in *Intake, reg *Registry, opts ...Option) (*TrustFollower, error) {
	if client == nil || topic == "" || in == nil || reg == nil {
		return nil, errors.New("trust follower: a client, the trust topic, an intake and a registry are required")
	}
	o := newOptions(opts)
	reg.setClockMargin(o.ClockMargin)
	f := &TrustFollower{client: client, topic: topic, in: in, reg: reg, log: o.Log, margin: o.ClockMargin, owners: o.owners,
		fetches: o.reader.fetches}
	if f.fetches == nil {
		f.fetches = client
	}
	return f, nil
}

// TrustConsumeOpts are the consumer options of a TrustFollower's client.
// A fetch waits up to the follower's idle time at the broker: new trust
// events come back at once, and a quiet topic costs one fetch per idle time.
func TrustConsumeOpts(topics Topics) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topics[TopicTrust]: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers take offsets: seeing them is how the
		// follower knows it reached the end of a transactional topic.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(trustIdle),
	}
}

// trustIdle is how long a TrustFollower polls at a time while no reader
// waits for it.
const trustIdle = 5 * time.Second

// trustLook is how long a TrustFollower that reads nothing new, and for
// which no reader waits, goes without looking at the trust topic's end.
// A look is two ListOffsets requests, which the client sends on a
// connection of its own (not the fetch's); franz-go closes a connection
// idle for 20 s (kgo.ConnIdleTimeout), so a look each trustIdle would hold
// that connection to the trust topic's leader open for ever, one per agent
// of the fleet, and one each trustLook lets it close in between. A look
// only moves coverage, and readers that need coverage wait, which gets
// them a look at once; what a rare look costs is TrustRead staying "not
// known" up to trustLook longer after a round that saw an open
// transaction.
const trustLook = 60 * time.Second

// Run follows the trust topic until ctx ends.
//
// Each round it lists the partition's end (its last stable offset) and,
// if every record before it is applied, advances the registry to the time
// the round began less the clock margin, since nothing appended before
// then can still be on its way, unless a transaction open since before
// then may yet bring a record appended earlier (see end); then it polls
// and applies what it reads. While no reader waits it polls for up to
// trustIdle (5 s) at a time, and a round after a poll that read nothing
// new, when the last look found the end, skips the look unless that look
// is trustLook (60 s) old (see mustLook): coverage then stays where the
// last look put it, which it still is (no record before it can come), and
// a reader that needs more waits, which gets it a look at once. A reader
// that waits (Registry.WaitCovers, or for a cut) cuts the poll short, and
// the next round looks and starts as soon as it can cover what the reader
// waits for: at once for an event that names a trust offset, so such an
// event is judged one look at the topic's end after it arrives; the margin
// after its append for any other.
func (f *TrustFollower) Run(ctx context.Context) error {
	next := int64(0)
	var last end
	var looked time.Time // zero: not yet
	moved := false       // the last poll read records
	for ctx.Err() == nil {
		began := time.Now()
		if f.mustLook(last, looked, began, moved) {
			e, err := f.end(ctx, began, next)
			if err != nil { // not known to be at the end: do not advance
				if ctx.Err() != nil {
					return nil
				}
				f.log.WarnContext(ctx, "trust topic end not listed; will retry", "topic", f.topic, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			last, looked = e, began
			if e.at {
				f.reg.cover(e.through, e.clean)
			}
		}
		d := f.reg.pollFor(time.Now(), f.margin, last.at)
		if last.blocked {
			f.log.DebugContext(ctx, "trust topic: a transaction open since before the time coverage would reach holds it back", "topic", f.topic,
				"at", looked.Add(-f.margin))
			d = trustIdle // until the transaction's end, read, ends the poll
		}
		read, stopped := f.poll(ctx, d, next)
		if stopped {
			return nil
		}
		moved, next = read > next, read
		f.reg.setRead(next)
	}
	return nil
}

// mustLook reports whether a round that begins at began lists the trust
// topic's end, the last look (last) having begun at looked (zero: none
// yet) and the last poll having read records (moved): unless the last
// look found the follower at the end, it read nothing since, no reader
// waits and the look is younger than trustLook. A waiter that comes after
// this says no finds the poll planned or started, and stops it (pollFor,
// setWake), so the next round looks.
func (f *TrustFollower) mustLook(last end, looked, began time.Time, moved bool) bool {
	return looked.IsZero() || !last.at || moved || f.reg.waiting() || began.Sub(looked) >= trustLook
}

// end is how far a round of the follower may advance the registry: at
// says it has read every record readable now, which covers the log up to
// through; clean, that no transaction was open either. blocked says it
// has read every record readable now but may advance nothing, for a
// transaction open since before through would be.
type end struct {
	at, clean, blocked bool
	through            time.Time
}

// end lists the trust topic's end, the round having begun at began, for a
// follower about to read from offset next. At the last stable offset,
// every record appended before began less the margin is read, unless a
// transaction is still open: its records were appended, with their log
// times, before it commits. Then the first record appended at or after
// that time, read uncommitted, shows whether every record not yet
// readable was appended after it (log times grow with offsets, within
// the margin); if not, the round covers nothing more, for advancing past
// a record not yet read would judge events without it that a rebuild
// judges with. The ends are listed in that order: if the last stable
// offset reaches the high watermark listed after it, no record was
// appended between, and none was open. Each listing is one ListOffsets
// request to the partition's leader (ListOffset).
func (f *TrustFollower) end(ctx context.Context, began time.Time, next int64) (end, error) {
	stable, err := ListOffset(ctx, f.client, f.topic, 0, ListEnd, true)
	if err != nil || next < stable {
		return end{}, err
	}
	high, err := ListOffset(ctx, f.client, f.topic, 0, ListEnd, false)
	if err != nil {
		return end{}, err
	}
	through := began.Add(-f.margin)
	if stable >= high {
		return end{at: true, clean: true, through: through}, nil
	}
	after, err := ListOffset(ctx, f.client, f.topic, 0, through.UnixMilli(), false)
	if err != nil || after > stable {
		return end{blocked: err == nil}, err
	}
	return end{at: true, through: through.Add(-time.Millisecond)}, nil
}

// poll fetches for up to d (no time: not at all) and applies what it
// reads, from offset next on; it returns the offset after the last record
// applied, and stopped when ctx ended in the middle.
func (f *TrustFollower) poll(ctx context.Context, d time.Duration, next int64) (int64, bool) {
	if d <= 0 {
		return next, false
	}
	pollCtx, cancel := context.WithTimeout(ctx, d)
	f.reg.setWake(cancel)
	fs := f.fetches.PollFetches(pollCtx)
	f.reg.setWake(nil)
	cancel()
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			f.log.WarnContext(ctx, "trust topic fetch failed; will retry", "topic", t, "partition", p, "err", err)
		}
	})
	stopped := false
	fs.EachRecord(func(r *kgo.Record) {
		if stopped {
			return
		}
		if err := f.apply(ctx, r); err != nil {
			stopped = true // ctx ended: the record is read again next time
			return
		}
		next = r.Offset + 1
	})
	return next, stopped
}

// apply takes one trust record through the intake into the registry. A
// record the intake refuses, or that the registry cannot apply, is
// refused with its reason; the keys it names stay unknown. It returns an
// error only when ctx ended.
func (f *TrustFollower) apply(ctx context.Context, r *kgo.Record) error {
	if f.owners != nil && !f.owners[string(r.Key)] {
		return nil // not followed (WithTrustOwners)
	}
	d, err := f.in.Take(ctx, r)
	if err == nil && d != nil {
		err = f.reg.Apply(d)
	}
	if err == nil || !IsPoison(err) {
		return err
	}
	if err := f.in.Refuse(ctx, Rejected{Record: r, Cause: err}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.log.ErrorContext(ctx, "trust event refused and not dead-lettered", "offset", r.Offset, "err", err)
	}
	return nil
}
