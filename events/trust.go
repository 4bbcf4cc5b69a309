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
// it verifies, and advances the registry's coverage whenever it has read to
// the end, so that readers of other topics judge each record by the keys
// that were valid at its log time (ErrKeysBehind until then).
type TrustFollower struct {
	// Client must consume the trust topic's partition 0 from the start
	// (see TrustConsumeOpts), and nothing else.
	Client *kgo.Client
	// Decoder verifies trust events. Only trust anchors sign them, so it
	// verifies against a plain registry of the anchors (NewRegistry), not
	// against the following Registry it feeds.
	Decoder  *Decoder
	Registry *Registry
	Log      *slog.Logger
	// Margin is subtracted from the local clock when the follower has read
	// to the end, for the broker's clock to be behind ours; zero means 5 s.
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
func (f *TrustFollower) Run(ctx context.Context) error {
	margin := f.Margin
	if margin <= 0 {
		margin = 5 * time.Second
	}
	for {
		polled := time.Now()
		fs := f.Client.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var atEnd bool
		fs.EachError(func(topic string, p int32, err error) {
			f.Log.WarnContext(ctx, "trust topic fetch failed; will retry", "topic", topic, "partition", p, "err", err)
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				f.apply(ctx, r)
			}
			next := int64(-1)
			if n := len(p.Records); n > 0 {
				next = p.Records[n-1].Offset + 1
			}
			atEnd = p.Err == nil && (next == p.HighWatermark || (len(p.Records) == 0 && p.HighWatermark >= 0))
		})
		if atEnd || fs.Empty() {
			f.Registry.Advance(polled.Add(-margin))
		}
	}
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
