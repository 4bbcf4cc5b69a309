//go:build integration

package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// BenchmarkProduceRaw is the broker's floor for BenchmarkProduce: batches of
// 100 unsigned 1 KiB records with the same client options, no CloudEvents.
func BenchmarkProduceRaw(b *testing.B) {
	s := newSetup(b, 8)
	cl := kafkatest.Client(b, events.ProducerOpts(nil)...)
	val := make([]byte, eventSize)
	rs := make([]*kgo.Record, 100)
	b.SetBytes(eventSize * int64(len(rs)))
	b.ReportAllocs()
	for b.Loop() {
		for i := range rs {
			rs[i] = &kgo.Record{Topic: s.topics[events.TopicConfig], Key: fmt.Appendf(nil, "cluster-%03d", i%32), Value: val}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rs))/b.Elapsed().Seconds(), "events/s")
}

// warmUp sends records through the broker so that its JIT has compiled the
// produce and fetch paths before a benchmark's clock starts.
func warmUp(b *testing.B, topic string) {
	b.Helper()
	cl := kafkatest.Client(b, events.ProducerOpts(nil)...)
	val := make([]byte, eventSize)
	for range 50 {
		rs := make([]*kgo.Record, 200)
		for i := range rs {
			rs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "warm-%d", i), Value: val}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}
