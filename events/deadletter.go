package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
)

// Headers a dead-letter record carries besides the original's own.
const (
	HeaderDLQReason    = "argosy_dlq_reason"
	HeaderDLQError     = "argosy_dlq_error"
	HeaderDLQTopic     = "argosy_dlq_topic"
	HeaderDLQPartition = "argosy_dlq_partition"
	HeaderDLQOffset    = "argosy_dlq_offset"
	HeaderDLQTime      = "argosy_dlq_time"
	// HeaderDLQDropped says the original value was too large to keep and
	// gives its size in bytes; the original stays in its own topic.
	HeaderDLQDropped = "argosy_dlq_dropped_bytes"
)

// DeadLetter writes records that cannot be processed to the dead-letter topic,
// with the reason and where they came from.
type DeadLetter struct {
	client *kgo.Client
	topic  string
	inst   *instruments
}

// NewDeadLetter returns a dead-letter writer to topic on client, which
// should be built with ProducerOpts. It takes the WithMeterProvider option.
func NewDeadLetter(client *kgo.Client, topic string, opts ...Option) (*DeadLetter, error) {
	if client == nil || topic == "" {
		return nil, errors.New("dead letter: a client and a topic are required")
	}
	return &DeadLetter{client: client, topic: topic, inst: newInstruments(newOptions(opts).Meters)}, nil
}

// Rejected is a record that cannot be processed, and why.
type Rejected struct {
	Record *kgo.Record
	Cause  error
}

// Send appends rec to the dead-letter topic and returns once it is durable.
// The original key, value and headers are kept, plus the reason code
// (Reason(cause)), the error text, and the original topic, partition, offset
// and log time.
func (d *DeadLetter) Send(ctx context.Context, rec *kgo.Record, cause error) error {
	return d.SendAll(ctx, Rejected{Record: rec, Cause: cause})
}

// SendAll appends every rejected record to the dead-letter topic, as Send
// does, in one batch: it returns once all of them are durable, or with the
// first failure.
func (d *DeadLetter) SendAll(ctx context.Context, rs ...Rejected) error {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*kgo.Record, len(rs))
	for i, r := range rs {
		out[i] = d.record(r.Record, r.Cause)
	}
	// Results come in the order records finish, not the order given.
	origin := make(map[*kgo.Record]*kgo.Record, len(rs))
	for i, o := range out {
		origin[o] = rs[i].Record
	}
	for _, res := range d.client.ProduceSync(ctx, out...) {
		if res.Err != nil {
			rec := origin[res.Record]
			return fmt.Errorf("dead-letter %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, res.Err)
		}
	}
	for _, r := range rs {
		count(ctx, d.inst.deadLettered, attribute.String("reason", Reason(r.Cause)))
	}
	return nil
}

func (d *DeadLetter) record(rec *kgo.Record, cause error) *kgo.Record {
	out := &kgo.Record{
		Topic:   d.topic,
		Key:     rec.Key,
		Value:   rec.Value,
		Headers: make([]kgo.RecordHeader, 0, len(rec.Headers)+7),
	}
	out.Headers = append(out.Headers, rec.Headers...)
	if checkSize(rec, MaxEventBytes) != nil {
		out.Value = nil
		out.Headers = append(out.Headers[:0], kgo.RecordHeader{Key: HeaderDLQDropped, Value: []byte(strconv.Itoa(RecordSize(rec)))})
	}
	errText := cause.Error()
	if len(errText) > 4096 {
		errText = errText[:4096]
	}
	out.Headers = append(out.Headers,
		kgo.RecordHeader{Key: HeaderDLQReason, Value: []byte(Reason(cause))},
		kgo.RecordHeader{Key: HeaderDLQError, Value: []byte(errText)},
		kgo.RecordHeader{Key: HeaderDLQTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderDLQPartition, Value: []byte(strconv.FormatInt(int64(rec.Partition), 10))},
		kgo.RecordHeader{Key: HeaderDLQOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		kgo.RecordHeader{Key: HeaderDLQTime, Value: []byte(rec.Timestamp.UTC().Format(time.RFC3339Nano))},
	)
	return out
}
