package events

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
}

// NewTrustFollower returns a follower of topic, the trust topic, that
// feeds reg. client must consume the topic's partition 0 from the start
// (see TrustConsumeOpts), and nothing else. Only trust anchors sign trust
// events, so in decodes against reg.Anchors(), which covers every log
// time, never against reg itself, which covers a time only once this
// follower has read past it. It takes the WithLogger, WithTrustOwners and
// WithClockMargin options: when the follower has read to the end, it
// advances the registry to the local clock less the margin, for the
// broker's clock to be behind ours.
func NewTrustFollower(client *kgo.Client, topic string, in *Intake, reg *Registry, opts ...Option) (*TrustFollower, error) {
	if client == nil || topic == "" || in == nil || reg == nil {
		return nil, errors.New("trust follower: a client, the trust topic, an intake and a registry are required")
	}
	o := newOptions(opts)
	reg.setClockMargin(o.ClockMargin)
	return &TrustFollower{client: client, topic: topic, in: in, reg: reg, log: o.Log, margin: o.ClockMargin, owners: o.owners}, nil
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

// trustIdle is how often a TrustFollower looks at the trust topic's end
// while no reader waits for it.
const trustIdle = 5 * time.Second

// Run follows the trust topic until ctx ends.
//
// Each round it lists the partition's end (its last stable offset) and,
// if every record before it is applied and no transaction is open (see
// atEnd), advances the registry to the time
// the round began less the clock margin, since nothing appended before
// then can still be on its way; then it polls and applies what it reads.
// While no reader waits it polls for up to 5 s at a time. A reader that
// waits (Registry.WaitCovers, or for a cut) cuts the poll short, and the
// next round starts as soon as it can cover what the reader waits for: at
// once for an event that names a trust offset, so such an event is judged
// one look at the topic's end after it arrives; the margin after its
// append for any other.
func (f *TrustFollower) Run(ctx context.Context) error {
	adm := kadm.NewClient(f.client)
	next := int64(0)
	for ctx.Err() == nil {
		began := time.Now()
		atEnd, err := f.atEnd(ctx, adm, next)
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
		if atEnd {
			f.reg.Advance(began.Add(-f.margin))
		}
		read, stopped := f.poll(ctx, f.reg.pollFor(time.Now(), f.margin, atEnd), next)
		if stopped {
			return nil
		}
		next = read
		f.reg.setRead(next)
	}
	return nil
}

// atEnd reports whether the follower, about to read from offset next, has
// read every trust record appended so far, or ever to become readable
// with a log time before now: next reaches the partition's last stable
// offset, and no transaction is open, which the last stable offset
// reaching the high watermark shows. A record of an open transaction was
// appended, and has its log time, before the transaction commits; until
// it does, a follower at the last stable offset has not read it, and
// advancing past its log time would judge events without it that a
// rebuild judges with it. The two offsets are listed in that order, after
// the round began: if the last stable offset reaches the high watermark
// listed after it, no record was appended between, and none was undecided.
func (f *TrustFollower) atEnd(ctx context.Context, adm *kadm.Client, next int64) (bool, error) {
	stable, err := adm.ListCommittedOffsets(ctx, f.topic)
	if err != nil {
		return false, err
	}
	s, ok := stable.Lookup(f.topic, 0)
	if !ok || s.Err != nil || next < s.Offset {
		return false, nil
	}
	high, err := adm.ListEndOffsets(ctx, f.topic)
	if err != nil {
		return false, err
	}
	h, ok := high.Lookup(f.topic, 0)
	return ok && h.Err == nil && s.Offset >= h.Offset, nil
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
	fs := f.client.PollFetches(pollCtx)
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
