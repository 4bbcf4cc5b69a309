//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// wireClusters and wireDeltas are how many clusters BenchmarkWireBytes
// sends status deltas for, and how many each.
const wireClusters, wireDeltas = 10, 20

// wireFleet is the fleet size whose trust topic the deltas' trust offsets
// are taken from.
const wireFleet = 10_000

// BenchmarkWireBytes is the bytes a status delta takes on the real
// broker, in each signature form, with Argosy's codec (zstd-fastest):
// alone in its batch, and five of one cluster in one batch event
// (io.argosy.status.applications.changed.v1), as the broker stores them
// (DescribeLogDirs). Each iteration signs fresh deltas as agents do and
// appends them to new topics, so run it with -benchtime=1x and compare
// forms with benchstat:
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

// wireBytes signs status deltas in form and returns the bytes each stores
// on the broker alone and five to a batch event.
func wireBytes(tb testing.TB, adm *kadm.Client, prefix string, form events.SigForm) (alone, batched float64, err error) {
	ctx := tb.Context()
	var deltas []agentDelta
	for c := range wireClusters {
		cluster := fmt.Sprintf("cluster-%03d", c)
		es, err := statusDeltas(cluster, wireDeltas, 1)
		if err != nil {
			return 0, 0, err
		}
		for _, e := range es {
			var d schemas.ApplicationStatusChanged
			if err := json.Unmarshal(e.Data(), &d); err != nil {
				return 0, 0, err
			}
			// An agent names how far it has read the trust topic, about
			// two records a cluster in a fleet of these.
			deltas = append(deltas, agentDelta{cluster: cluster, trust: fmt.Sprint(2*wireFleet + c), delta: d})
		}
	}
	lone, fives, err := signedRecords(ctx, deltas, form)
	if err != nil {
		return 0, 0, err
	}
	if len(lone) != wireClusters*wireDeltas || len(fives) != wireClusters*wireDeltas/5 {
		return 0, 0, fmt.Errorf("%d records alone and %d batches, want %d and %d", len(lone), len(fives), wireClusters*wireDeltas, wireClusters*wireDeltas/5)
	}
	codec := kgo.ZstdCompression().WithLevel(1)
	if alone, err = storedPerRecord(ctx, kafkatest.Bootstrap(tb), adm, prefix+"alone", codec, batchesOfOne(lone)); err != nil {
		return 0, 0, err
	}
	batched, err = storedPerRecord(ctx, kafkatest.Bootstrap(tb), adm, prefix+"fives", codec, batchesOfOne(fives))
	return alone, batched / 5, err
}
