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
// it verifies, and advances the registry's coverage whenever it has read to
// the end, so that readers of other topics judge each record by the keys
// that were valid at its log time (ErrKeysBehind until then).
type TrustFollower struct {
	// Client must consume the trust topic's partition 0 from the start
	// (see TrustConsumeOpts), and nothing else.
	Client *kgo.Client
	// Topic is the trust topic's name.
	Topic string
	// Decoder verifies trust events. Only trust anchors sign them, so it
	// verifies against a plain registry of the anchors (NewRegistry), not
	// against the following Registry it feeds.
	Decoder  *Decoder
	Registry *Registry
	Log      *slog.Logger
	// Margin is subtracted from the local clock when the follower has read
	// to the end, for the broker's clock to be behind ours; zero means 2 s.
	Margin time.Duration
}

// TrustConsumeOpts are the consumer options of a TrustFollower's client.
func TrustConsumeOpts(topics Topics) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topics[TopicTrust]: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(time.Second),
	}
}

// Run follows the trust topic until ctx ends.
//
// It polls for at most a second at a time. Whenever it has applied every
// record up to the partition's end (its last stable offset, read again after
// each quiet poll), it advances the registry to the time the poll began less
// Margin, since nothing appended before then can still be on its way.
func (f *TrustFollower) Run(ctx context.Context) error {
	margin := f.Margin
	if margin <= 0 {
		margin = 2 * time.Second
	}
	topic := f.Topic
	adm := kadm.NewClient(f.Client)
	next := int64(0)
	for ctx.Err() == nil {
		polled := time.Now()
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := f.Client.PollFetches(pollCtx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				f.Log.WarnContext(ctx, "trust topic fetch failed; will retry", "topic", t, "partition", p, "err", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			f.apply(ctx, r)
			next = r.Offset + 1
		})
		ends, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			continue // not known to be at the end: do not advance
		}
		if end, ok := ends.Lookup(topic, 0); ok && end.Err == nil && next >= end.Offset {
			f.Registry.Advance(polled.Add(-margin))
		}
	}
	return nil
}

func (f *TrustFollower) apply(ctx context.Context, r *kgo.Record) {
	d, err := f.Decoder.Decode(ctx, r)
	if err == nil {
		err = f.Registry.Apply(d)
	}
	if err != nil && !errors.Is(err, ErrKeysBehind) {
		f.Log.ErrorContext(ctx, "trust event refused; keys it names stay unknown", "offset", r.Offset, "err", err)
	}
}
