package events

import (
	"context"
	"errors"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Intake is the one path by which a record read from the log becomes an
// event: it decodes the record, waits while the key registry is behind the
// record's log time, and refuses, with a reason, a record that can never be
// accepted; refused records go to the dead-letter topic. Reader,
// TrustFollower, the agent's bootstrap and the projector all read through
// an Intake, so every reader of the log judges a record alike, and a live
// reader judges it as a rebuild from the log does.
type Intake struct {
	dec  *Decoder
	dlq  *DeadLetter
	log  *slog.Logger
	inst *instruments
}

// NewIntake returns an intake that decodes with dec and dead-letters to
// dlq. A nil dlq only logs refused records: a reader that many processes
// run over the same records (every agent follows the trust topic) leaves
// dead-lettering them to one of its kind. It takes the WithLogger and
// WithMeterProvider options.
func NewIntake(dec *Decoder, dlq *DeadLetter, opts ...Option) (*Intake, error) {
	if dec == nil {
		return nil, errors.New("intake: a decoder is required")
	}
	o := newOptions(opts)
	return &Intake{dec: dec, dlq: dlq, log: o.Log, inst: newInstruments(o.Meters)}, nil
}

// Decoder returns the intake's decoder.
func (in *Intake) Decoder() *Decoder { return in.dec }

// Take decodes rec. It returns
//   - the event, once the key registry covers the record's log time (it
//     waits for that: ErrKeysBehind never leaves Take);
//   - nil and nil for a transaction marker, which holds no event;
//   - nil and a *DecodeError for a record that can never be accepted
//     (IsPoison reports true), which the caller passes to Refuse once it
//     has done whatever must come first;
//   - nil and ctx's error if ctx ended while it waited.
func (in *Intake) Take(ctx context.Context, rec *kgo.Record) (*Decoded, error) {
	if rec.Attrs.IsControl() {
		return nil, nil
	}
	for waited := false; ; waited = true {
		d, err := in.dec.Decode(ctx, rec)
		if !errors.Is(err, ErrKeysBehind) {
			return d, err
		}
		if !waited {
			count(ctx, in.inst.keysBehind)
		}
		var behind *keysBehind
		if !errors.As(err, &behind) {
			behind = &keysBehind{at: rec.Timestamp}
		}
		if err := behind.wait(ctx, in.dec.verifier.keys); err != nil {
			return nil, err
		}
	}
}

// Refuse logs every rejected record with its reason and appends it to the
// dead-letter topic, in one batch; it returns once all of them are durable
// (at once when the intake has no dead-letter topic).
func (in *Intake) Refuse(ctx context.Context, rs ...Rejected) error {
	msg := "record refused; no dead-letter topic here"
	if in.dlq != nil {
		if err := in.dlq.SendAll(ctx, rs...); err != nil {
			return err
		}
		msg = "record dead-lettered"
	}
	for _, r := range rs {
		in.log.WarnContext(ctx, msg, "topic", r.Record.Topic, "partition", r.Record.Partition,
			"offset", r.Record.Offset, "reason", Reason(r.Cause), "err", r.Cause)
	}
	return nil
}
