//go:build integration

package main

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// wireClusters and wireDeltas are how many clusters BenchmarkWireBytes
// sends status deltas for, and how many each.
const wireClusters, wireDeltas = 10, 20

// wireFleet is the fleet size whose trust topic the deltas' trust offsets
// are taken from.
const wireFleet = 10_000

// BenchmarkWireBytes is the bytes a status delta takes on the real
// broker, in each signature form, with Argosy's codec (zstd-fastest):
// alone in its batch and five of one cluster to a batch, as the broker
// stores them (DescribeLogDirs). Each iteration appends fresh deltas
// through an events.Producer and appends them again in those batches, so
// run it with -benchtime=1x and compare forms with benchstat:
//
//	go test -tags integration -run '^$' -bench WireBytes -benchtime 1x -count 6 ./bench/fleet/
func BenchmarkWireBytes(b *testing.B) {
	for _, form := range []events.SigForm{events.SigDSSE, events.SigCompact} {
		b.Run("form="+form.String(), func(b *testing.B) {
			adm := kadm.NewClient(kafkatest.Client(b))
			var alone, batched float64
			n := 0
			for b.Loop() {
				a, f, err := wireBytes(b, adm, fmt.Sprintf("%s%d.", kafkatest.Prefix(b), n), form)
				if err != nil {
					b.Fatal(err)
				}
				alone, batched, n = alone+a, batched+f, n+1
			}
			b.ReportMetric(alone/float64(n), "B/delta-alone")
			b.ReportMetric(batched/float64(n), "B/delta-in-5")
		})
	}
}

// wireBytes publishes status deltas signed in form to a new status topic
// and returns the bytes each stores on the broker alone and five to a
// batch.
func wireBytes(tb testing.TB, adm *kadm.Client, prefix string, form events.SigForm) (alone, batched float64, err error) {
	ctx := tb.Context()
	topic := prefix + "status"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")}, topic); err != nil {
		return 0, 0, err
	}
	kafkatest.DeleteAtEnd(tb, topic)
	client := kafkatest.Client(tb, events.ProducerOpts(nil)...)
	for c := range wireClusters {
		signer, err := events.GenerateSigner()
		if err != nil {
			return 0, 0, err
		}
		// An agent names how far it has read the trust topic, about two
		// records a cluster in a fleet of these.
		read := int64(2*wireFleet + c)
		signer = signer.WithTrustOffset(func() (int64, bool) { return read, true })
		p, err := events.NewProducer(client, signer, events.Topics{events.TopicStatus: topic}, events.WithSigForm(form))
		if err != nil {
			return 0, 0, err
		}
		es, err := statusDeltas(fmt.Sprintf("cluster-%03d", c), wireDeltas)
		if err != nil {
			return 0, 0, err
		}
		if _, err := p.Publish(ctx, es...); err != nil {
			return 0, 0, err
		}
	}
	sample, err := readDeltas(ctx, kafkatest.Bootstrap(tb), topic, wireClusters*wireDeltas)
	if err != nil {
		return 0, 0, err
	}
	if len(sample) != wireClusters*wireDeltas {
		return 0, 0, fmt.Errorf("read %d deltas back, want %d", len(sample), wireClusters*wireDeltas)
	}
	codec := kgo.ZstdCompression().WithLevel(1)
	if alone, err = storedPerRecord(ctx, kafkatest.Bootstrap(tb), adm, prefix+"alone", codec, batchesOfOne(sample)); err != nil {
		return 0, 0, err
	}
	batched, err = storedPerRecord(ctx, kafkatest.Bootstrap(tb), adm, prefix+"fives", codec, batchesOfFive(sample))
	return alone, batched, err
}
