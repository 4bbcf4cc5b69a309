package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/schemas"
)

// MaxEventBytes is the documented size limit of one event on the wire: key,
// headers and value together. Topics allow 1 MiB records so that a limit-sized
// event always fits with batch overhead.
const MaxEventBytes = 512 << 10

// Decoded is an event that passed every check: a CloudEvent of a known type,
// signed by a key that may sign it, targeting the reader, whose data matches
// its schema.
type Decoded struct {
	// Event holds only verified attributes, extensions and data.
	Event *event.Event
	Spec  Spec
	// Data is a pointer to the typed payload, e.g. *schemas.Heartbeat.
	Data any
	// Subject is the parsed subject of config and status events.
	Subject Subject
	// Signer is the key that verified the event.
	Signer Key
	// LogTime is the broker's append time of the record.
	LogTime time.Time
	// TraceParent and TraceState are the unsigned W3C trace context.
	TraceParent, TraceState string

	Topic     string
	Partition int32
	Offset    int64
}

// Decoder turns records into Decoded events.
type Decoder struct {
	verifier *Verifier
	target   string
	maxBytes int
}

// DecoderOption configures a Decoder.
type DecoderOption func(*Decoder)

// WithTarget makes the decoder reject config events whose signed subject
// names a cluster other than cluster: an agent reading its own partition must
// not accept another cluster's events, whatever the record key says.
func WithTarget(cluster string) DecoderOption { return func(d *Decoder) { d.target = cluster } }

// WithMaxBytes overrides MaxEventBytes.
func WithMaxBytes(n int) DecoderOption { return func(d *Decoder) { d.maxBytes = n } }

// NewDecoder returns a decoder that verifies signatures with v.
func NewDecoder(v *Verifier, opts ...DecoderOption) (*Decoder, error) {
	d := &Decoder{verifier: v, maxBytes: MaxEventBytes}
	for _, o := range opts {
		o(d)
	}
	if _, err := compiledSchemas(); err != nil {
		return nil, err
	}
	return d, nil
}

// RecordSize is the size of a record as the size limit counts it.
func RecordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Decode checks and decodes one record. Every failure is a *DecodeError.
func (d *Decoder) Decode(ctx context.Context, r *kgo.Record) (*Decoded, error) {
	if n := RecordSize(r); n > d.maxBytes {
		return nil, reject(ErrOversized, fmt.Errorf("%d bytes, limit %d", n, d.maxBytes))
	}
	e, err := ParseRecord(ctx, r)
	if err != nil {
		return nil, err
	}
	sp, ok := Lookup(e.Type())
	if !ok {
		return nil, reject(ErrUnknownType, fmt.Errorf("%q", e.Type()))
	}
	if err := checkContent(e, sp); err != nil {
		return nil, err
	}
	verified, key, err := d.verifier.Verify(e, r.Timestamp)
	if err != nil {
		return nil, err
	}
	out := &Decoded{Event: verified, Spec: sp, Signer: key, LogTime: r.Timestamp,
		TraceParent: stringExt(e, extTraceParent), TraceState: stringExt(e, extTraceState),
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if err := d.authorize(out); err != nil {
		return nil, err
	}
	if err := ValidateData(sp.Type, e.Data()); err != nil {
		return nil, err
	}
	out.Data = sp.NewData()
	if err := json.Unmarshal(e.Data(), out.Data); err != nil {
		return nil, reject(ErrSchema, err)
	}
	if c, ok := out.Data.(interface{ ClusterName() string }); ok && out.Subject.Cluster != "" && c.ClusterName() != out.Subject.Cluster {
		return nil, reject(ErrMalformed, fmt.Errorf("data names cluster %q, subject %q", c.ClusterName(), out.Subject.Cluster))
	}
	return out, nil
}

// ParseRecord reads a record as a CloudEvent, binary or structured, without
// verifying it. Failures are *DecodeError with kind ErrMalformed.
func ParseRecord(ctx context.Context, r *kgo.Record) (*event.Event, error) {
	m := NewMessage(r)
	if m.ReadEncoding() == binding.EncodingUnknown {
		return nil, reject(ErrMalformed, errors.New("not a cloudevent: no ce_specversion header and no application/cloudevents content-type"))
	}
	e, err := binding.ToEvent(ctx, m)
	if err != nil {
		return nil, reject(ErrMalformed, err)
	}
	if err := e.Validate(); err != nil {
		return nil, reject(ErrMalformed, err)
	}
	return e, nil
}

func checkContent(e *event.Event, sp Spec) error {
	if ct := e.DataContentType(); ct != event.ApplicationJSON {
		return reject(ErrMalformed, fmt.Errorf("datacontenttype %q, want %q", ct, event.ApplicationJSON))
	}
	if s := e.DataSchema(); s != "" && s != sp.SchemaURL() {
		return reject(ErrSchema, fmt.Errorf("dataschema %q, want %q", s, sp.SchemaURL()))
	}
	return nil
}

// authorize checks that the signing key may sign this event and, for events
// about one cluster, that the event targets this reader.
func (d *Decoder) authorize(out *Decoded) error {
	sp, key := out.Spec, out.Signer
	if sp.Family == FamilyConfig || sp.Signer == schemas.RoleCluster {
		subj, err := ParseSubject(out.Event.Subject())
		if err != nil {
			return reject(ErrMalformed, err)
		}
		out.Subject = subj
	}
	if key.Role != sp.Signer {
		return reject(ErrNotAuthorized, fmt.Errorf("%s key %q may not sign %s", key.Role, key.ID, sp.Type))
	}
	if sp.Signer == schemas.RoleCluster && key.Owner != out.Subject.Cluster {
		return reject(ErrNotAuthorized, fmt.Errorf("key of cluster %q may not sign for cluster %q", key.Owner, out.Subject.Cluster))
	}
	if d.target != "" && sp.Topic == TopicConfig && out.Subject.Cluster != d.target {
		return reject(ErrWrongTarget, fmt.Errorf("event for cluster %q read by %q", out.Subject.Cluster, d.target))
	}
	return nil
}
