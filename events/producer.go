package events

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
)

// ProducerOpts are the client options every Argosy producer uses: acks from
// all in-sync replicas, the Kafka-compatible partitioner with pins, and
// the process's batch compressor (Compressor). Writes are idempotent
// (franz-go's default); NewProducer refuses a client that turned that off
// or asks for fewer acks.
func ProducerOpts(pins map[string]int32) []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(NewPartitioner(pins)),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.WithCompressor(Compressor),
	}
}

// Compressor compresses the record batches of every producer in the
// process: zstd at its fastest level, then snappy for a broker older than
// Kafka 2.1. Of the codecs Kafka knows, zstd made the smallest batches of
// real status deltas, and its fastest level within 2% of its default's at
// a third of the memory (bench/results). Its encoders are pooled across the
// process's clients: a hub's writer lanes, or many agents in one process,
// share a few rather than keep megabytes each. Records appended with any
// other codec, as before zstd was chosen, stay readable: consumers
// decompress whatever codec a batch names.
var Compressor = mustCompressor(kgo.ZstdCompression().WithLevel(1), kgo.SnappyCompression())

func mustCompressor(codecs ...kgo.CompressionCodec) kgo.Compressor {
	c, err := kgo.DefaultCompressor(codecs...)
	if err != nil {
		panic(fmt.Sprintf("events: compressor: %v", err)) // fixed codecs that franz-go knows
	}
	return c
}

// Producer signs events and appends them to the topics the catalogue names.
type Producer struct {
	client *kgo.Client
	signer *Signer
	topics Topics
	tracer trace.Tracer
	inst   *instruments
	form   SigForm
}

// NewProducer returns a producer. client should be built with ProducerOpts;
// a client with idempotent writes disabled or acks other than all in-sync
// replicas is refused, since Publish promises durability. It takes the
// WithTracerProvider, WithMeterProvider and WithSigForm options.
func NewProducer(client *kgo.Client, signer *Signer, topics Topics, opts ...Option) (*Producer, error) {
	if client == nil {
		return nil, errors.New("producer: a client is required")
	}
	if off, _ := client.OptValue(kgo.DisableIdempotentWrite).(bool); off {
		return nil, errors.New("producer: idempotent writes are disabled")
	}
	if acks, ok := client.OptValue(kgo.RequiredAcks).(kgo.Acks); !ok || acks != kgo.AllISRAcks() {
		return nil, errors.New("producer: client must require acks from all in-sync replicas")
	}
	if signer == nil {
		return nil, errors.New("producer: a signer is required")
	}
	o := newOptions(opts)
	return &Producer{client: client, signer: signer, topics: topics, tracer: o.tracer(), inst: newInstruments(o.Meters), form: o.SigForm}, nil
}

// Publish adds the trace context of ctx, signs and appends the events, and
// returns once every one is durable (acknowledged by all in-sync replicas) or
// one failed. The returned records carry partition and offset; their
// Timestamp is the producer's clock, while readers see the broker's log
// append time (Decoded.LogTime).
func (p *Producer) Publish(ctx context.Context, es ...*event.Event) ([]*kgo.Record, error) {
	ctx, span := p.tracer.Start(ctx, "events.publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("argosy.events", len(es))))
	defer span.End()
	recs, err := p.encodeAll(ctx, es)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	if err := p.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("produce: %w", err)
	}
	for _, e := range es {
		countType(ctx, p.inst.published, e.Type())
	}
	return recs, nil
}

// encodeAll encodes a batch. Signing and schema validation are CPU-bound:
// the batch is encoded on every core.
func (p *Producer) encodeAll(ctx context.Context, es []*event.Event) ([]*kgo.Record, error) {
	recs := make([]*kgo.Record, len(es))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, e := range es {
		g.Go(func() error {
			r, err := p.encode(gctx, e)
			recs[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return recs, nil
}

func (p *Producer) encode(ctx context.Context, e *event.Event) (*kgo.Record, error) {
	sp, ok := Lookup(e.Type())
	if !ok {
		return nil, fmt.Errorf("publish: %w: %q", ErrUnknownType, e.Type())
	}
	topic, ok := p.topics[sp.Topic]
	if !ok {
		return nil, fmt.Errorf("publish %s: no %s topic configured", e.Type(), sp.Topic)
	}
	if _, ok := extension(e, ExtPartitionKey); !ok {
		return nil, fmt.Errorf("publish %s: %w", e.Type(), errNoKey)
	}
	if err := ValidateData(e.Type(), e.Data()); err != nil {
		return nil, fmt.Errorf("publish %s: %w", e.Type(), err)
	}
	InjectTrace(ctx, e)
	if err := p.sign(ctx, sp, e); err != nil {
		return nil, err
	}
	r, err := EventRecord(ctx, e)
	if err != nil {
		return nil, err
	}
	if err := checkSize(r, MaxEventBytes); err != nil {
		return nil, fmt.Errorf("publish %s: %w", e.Type(), err)
	}
	r.Topic = topic
	return r, nil
}

// sign signs e in the producer's form. The DSSE form is for readers that
// predate the compact one, and those want a dataschema on every event.
func (p *Producer) sign(ctx context.Context, sp Spec, e *event.Event) error {
	if p.form == SigDSSE && e.DataSchema() == "" {
		e.SetDataSchema(sp.SchemaURL())
	}
	return p.signer.SignAs(ctx, e, p.form)
}

var errNoKey = errors.New("event has no partitionkey")
