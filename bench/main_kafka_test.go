//go:build integration

package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// TestMain starts Kafka only when benchmarks run: this package has no
// tests, and `make test` should not pay for a broker it does not use.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(kafkatest.Main(m))
}

// eventSize is the size of each benchmark event's data.
const eventSize = 1024

type setup struct {
	topics events.Topics
	signer *events.Signer
	reg    *events.Registry
}

func newSetup(b *testing.B, partitions int32) *setup {
	b.Helper()
	signer, err := events.GenerateSigner()
	if err != nil {
		b.Fatal(err)
	}
	s := &setup{topics: events.DefaultTopics(kafkatest.Prefix(b)), signer: signer,
		reg: events.NewRegistry(events.HubAnchor("hub", signer.Public()))}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(b))
	if err := events.EnsureTopics(ctx, adm, s.topics, events.TopicPlan(partitions, partitions), 1, 1); err != nil {
		b.Fatal(err)
	}
	warmUp(b, s.topics[events.TopicTrust]) // a topic no benchmark reads
	return s
}

// newEvent returns an application upsert whose data is eventSize bytes.
func newEvent(b *testing.B, cluster string, gen int64) *event.Event {
	b.Helper()
	data := schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "guestbook", Generation: gen},
		Project: "default", Spec: json.RawMessage(`{"project":"default","pad":""}`)}
	raw, err := json.Marshal(data)
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", max(0, eventSize-len(raw)))
	data.Spec = json.RawMessage(`{"project":"default","pad":"` + pad + `"}`)
	subj := events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "guestbook"}
	e, err := events.New("//argosy.dev/bench", events.TypeApplicationUpserted, subj.String(), cluster, data)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkProduce appends signed 1 KiB events in batches of 100, each batch
// waiting until every record is durable (acks=all, idempotent).
func BenchmarkProduce(b *testing.B) {
	s := newSetup(b, 8)
	cl := kafkatest.Client(b, events.ProducerOpts(nil)...)
	p, err := events.NewProducer(cl, s.signer, s.topics)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 100
	es := make([]*event.Event, batch)
	for i := range es {
		es[i] = newEvent(b, fmt.Sprintf("cluster-%03d", i%32), int64(i+1))
	}
	ctx := context.Background()
	b.SetBytes(eventSize * batch)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		batchCopy := make([]*event.Event, batch)
		for i, e := range es {
			c := e.Clone()
			batchCopy[i] = &c
		}
		if _, err := p.Publish(ctx, batchCopy...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkConsume reads, verifies and decodes 20,000 signed 1 KiB events
// per iteration with a Reader over 8 partitions and its default commit
// interval.
func BenchmarkConsume(b *testing.B) {
	s := newSetup(b, 8)
	const total = 20000
	cl := kafkatest.Client(b, events.ProducerOpts(nil)...)
	p, err := events.NewProducer(cl, s.signer, s.topics)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < total; i += 500 {
		var es []*event.Event
		for j := range 500 {
			es = append(es, newEvent(b, fmt.Sprintf("cluster-%03d", j%64), int64(i+j+1)))
		}
		if _, err := p.Publish(ctx, es...); err != nil {
			b.Fatal(err)
		}
	}
	dec, err := events.NewDecoder(events.NewVerifier(s.reg))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(eventSize * total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() { // each pass reads the whole topic with a fresh group
		readAll(b, s, dec, total)
	}
	b.ReportMetric(float64(b.N*total)/b.Elapsed().Seconds(), "events/s")
}

// intake reads through dec and dead-letters to the setup's topic.
func intake(b *testing.B, s *setup, dec *events.Decoder) *events.Intake {
	b.Helper()
	dlq, err := events.NewDeadLetter(kafkatest.Client(b, events.ProducerOpts(nil)...), s.topics[events.TopicDeadLetter])
	if err != nil {
		b.Fatal(err)
	}
	in, err := events.NewIntake(dec, dlq)
	if err != nil {
		b.Fatal(err)
	}
	return in
}

func readAll(b *testing.B, s *setup, dec *events.Decoder, total int) {
	b.Helper()
	rd, err := events.NewReader(kafkatest.Client(b, events.ReaderOpts()...), intake(b, s, dec),
		s.topics[events.TopicConfig], fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var n atomic.Int64
	if err := rd.Run(ctx, func(context.Context, *events.Decoded) error {
		if n.Add(1) == int64(total) {
			cancel()
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if n.Load() < int64(total) {
		b.Fatalf("read %d of %d", n.Load(), total)
	}
}
