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

// Default staleness bounds: an event may reach the log at most MaxAge after
// its signed time (an agent catching up after Kafka was away) and at most
// MaxSkew before it (clock skew).
const (
	DefaultMaxAge  = 7 * 24 * time.Hour
	DefaultMaxSkew = 5 * time.Minute
)

// TrustMaxAge is how long after its signing a key event may reach the
// trust topic. The hub signs a key event and appends it in the one
// transaction that decides it (a transaction Kafka aborts within a minute
// when its writer is gone), so a later append is a copy, say of an
// aborted registration's key, and is refused (ErrStale).
const TrustMaxAge = 10 * time.Minute

// OperationMaxAge is the longest after its signing that an
// operation.requested may be appended and still be the original: the
// replay rule's bound, which every reader of the log shares, since none can
// know an agent's flags (docs/design.md, Replays). It is also an agent's
// default for how late an operation may start.
const OperationMaxAge = 10 * time.Minute

// OperationExpiry is when the operation p, signed at signed, stops being
// wanted: the earlier of its own expiresAt, if it has one, and signed plus
// maxAge.
func OperationExpiry(signed time.Time, p *schemas.OperationRequested, maxAge time.Duration) time.Time {
	expires := signed.Add(maxAge)
	if p.ExpiresAt != nil && p.ExpiresAt.Before(expires) {
		expires = *p.ExpiresAt
	}
	return expires
}

// Decoded is an event that passed every check: a CloudEvent of a known type,
// on its own topic, signed by a key that may sign it, targeting the reader,
// appended in time, whose data matches its schema.
type Decoded struct {
	// Event holds only verified attributes, extensions and data.
	Event *event.Event
	Spec  Spec
	// Data is a pointer to the typed payload, e.g. *schemas.Heartbeat.
	Data any
	// Subject is the parsed subject of events about one cluster.
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
	decoderConfig
}

// decoderConfig is what a Decoder's options set.
type decoderConfig struct {
	target     string
	roles      map[string]Topic
	maxBytes   int
	maxAge     time.Duration
	maxSkew    time.Duration
	createTime bool
}

// WithTarget makes a Decoder reject events about a cluster other than
// cluster: an agent reading its own partition must not accept another
// cluster's events, whatever the record key says.
func WithTarget(cluster string) Option { return func(o *options) { o.decoder.target = cluster } }

// WithTopics makes a Decoder reject an event read from one of topics whose
// type belongs on another topic (ErrWrongTopic).
func WithTopics(topics Topics) Option {
	return func(o *options) {
		o.decoder.roles = make(map[string]Topic, len(topics))
		for role, name := range topics {
			o.decoder.roles[name] = role
		}
	}
}

// WithMaxBytes overrides a Decoder's MaxEventBytes.
func WithMaxBytes(n int) Option { return func(o *options) { o.decoder.maxBytes = n } }

// WithStaleness overrides a Decoder's DefaultMaxAge and DefaultMaxSkew.
func WithStaleness(maxAge, maxSkew time.Duration) Option {
	return func(o *options) { o.decoder.maxAge, o.decoder.maxSkew = maxAge, maxSkew }
}

// AcceptCreateTime lets a Decoder take records whose timestamp the producer
// chose, such as records built in memory. Records read from Argosy's topics
// carry the broker's LogAppendTime, and without this option anything else is
// refused: key validity is judged at the record's time, so a writer must not
// choose it.
func AcceptCreateTime() Option { return func(o *options) { o.decoder.createTime = true } }

// NewDecoder returns a decoder that verifies signatures with v. It takes
// the WithTarget, WithTopics, WithMaxBytes, WithStaleness and
// AcceptCreateTime options.
func NewDecoder(v *Verifier, opts ...Option) (*Decoder, error) {
	d := &Decoder{verifier: v, decoderConfig: newOptions(opts).decoder}
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

// checkSize refuses a record over limit bytes.
func checkSize(r *kgo.Record, limit int) error {
	if n := RecordSize(r); n > limit {
		return reject(ErrOversized, fmt.Errorf("%d bytes, limit %d", n, limit))
	}
	return nil
}

// Decode checks and decodes one record. A record that can never be accepted
// fails with a *DecodeError; ErrKeysBehind (retry later) is the one other
// error.
func (d *Decoder) Decode(ctx context.Context, r *kgo.Record) (*Decoded, error) {
	if err := checkSize(r, d.maxBytes); err != nil {
		return nil, err
	}
	if !d.createTime && r.Attrs.TimestampType() != 1 {
		return nil, reject(ErrTimestamp, errors.New("record timestamp is not the broker's LogAppendTime"))
	}
	e, err := ParseRecord(ctx, r)
	if err != nil {
		return nil, err
	}
	sp, ok := Lookup(e.Type())
	if !ok {
		return nil, reject(ErrUnknownType, fmt.Errorf("%q", e.Type()))
	}
	out := &Decoded{Spec: sp, LogTime: r.Timestamp, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		TraceParent: stringExt(e, extTraceParent), TraceState: stringExt(e, extTraceState)}
	if err := d.checkEnvelope(e, out); err != nil {
		return nil, err
	}
	signed, signer, env, err := d.verifier.check(e, r.Timestamp, func(k Key) error { return authorize(sp, out.Subject, k) })
	if err != nil {
		return nil, err
	}
	// e was parsed for this call alone, so it is trimmed in place.
	keepVerified(e, signed)
	out.Event, out.Signer = e, signer
	if out.Data, err = decodeData(sp, e.Data()); err != nil {
		return nil, err
	}
	if err := d.verifier.checkSuccessor(env, out.Data); err != nil {
		return nil, err
	}
	if c, ok := out.Data.(interface{ ClusterName() string }); ok && out.Subject.Cluster != "" && c.ClusterName() != out.Subject.Cluster {
		return nil, reject(ErrMalformed, fmt.Errorf("data names cluster %q, subject %q", c.ClusterName(), out.Subject.Cluster))
	}
	if b, ok := out.Data.(*schemas.ApplicationStatusBatch); ok {
		if i := b.ForeignDelta(); i >= 0 {
			return nil, reject(ErrMalformed, fmt.Errorf("delta %d names cluster %q, the batch %q", i, b.Deltas[i].Cluster, b.Cluster))
		}
	}
	return out, nil
}

// decodeData validates data against sp's schema and decodes it into sp's
// type. Data that conformsFast skips the validator, most of a status
// event's decoding cost after its signature.
func decodeData(sp Spec, data []byte) (any, error) {
	v := sp.NewData()
	decodeErr := json.Unmarshal(data, v)
	if decodeErr == nil && conformsFast(v, data) {
		return v, nil
	}
	if err := ValidateData(sp.Type, data); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, reject(ErrSchema, decodeErr)
	}
	return v, nil
}

// ParseRecord reads a record as a CloudEvent 1.0, binary or structured,
// without verifying it. Failures are *DecodeError with kind ErrMalformed.
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
	if v := e.SpecVersion(); v != event.CloudEventsVersionV1 {
		return nil, reject(ErrMalformed, fmt.Errorf("specversion %q, want %q", v, event.CloudEventsVersionV1))
	}
	return e, nil
}

// checkEnvelope checks what can be checked before the signature: content
// type, schema, topic, subject, target and time. The subject it parses is
// trusted only once a signature over it verifies.
func (d *Decoder) checkEnvelope(e *event.Event, out *Decoded) error {
	sp := out.Spec
	if ct := e.DataContentType(); ct != event.ApplicationJSON {
		return reject(ErrMalformed, fmt.Errorf("datacontenttype %q, want %q", ct, event.ApplicationJSON))
	}
	if s := e.DataSchema(); s != "" && s != sp.SchemaURL() {
		return reject(ErrSchema, fmt.Errorf("dataschema %q, want %q", s, sp.SchemaURL()))
	}
	// The desired-state topic holds copies of config events.
	if role, ok := d.roles[out.Topic]; ok && role != sp.Topic && (role != TopicDesired || sp.Topic != TopicConfig) {
		return reject(ErrWrongTopic, fmt.Errorf("%s belongs on the %s topic, read from %s (%s)", sp.Type, sp.Topic, out.Topic, role))
	}
	subj, err := ParseSubject(e.Subject())
	switch {
	case err == nil:
		out.Subject = subj
	case sp.Family == FamilyConfig || sp.Family == FamilyQuery || sp.Signer == schemas.RoleCluster:
		return reject(ErrMalformed, err)
	}
	if d.target != "" && out.Subject.Cluster != "" && out.Subject.Cluster != d.target {
		return reject(ErrWrongTarget, fmt.Errorf("event for cluster %q read by %q", out.Subject.Cluster, d.target))
	}
	if d.target != "" && (sp.Topic == TopicConfig || sp.Topic == TopicQueries) && out.Subject.Cluster == "" {
		return reject(ErrWrongTarget, fmt.Errorf("%s event names no cluster", sp.Family))
	}
	if sp.Topic == TopicTrust {
		return d.checkTimeWithin(e.Time(), out.LogTime, min(d.maxAge, TrustMaxAge))
	}
	return d.checkTime(e.Time(), out.LogTime)
}

// checkTime refuses an event appended long after it was signed (a replay of
// an old event) or well before (a writer's clock far ahead).
func (d *Decoder) checkTime(signed, logged time.Time) error {
	return d.checkTimeWithin(signed, logged, d.maxAge)
}

// checkTimeWithin is checkTime with maxAge for the decoder's.
func (d *Decoder) checkTimeWithin(signed, logged time.Time, maxAge time.Duration) error {
	switch {
	case signed.IsZero():
		return reject(ErrMalformed, errors.New("event has no time"))
	case logged.Sub(signed) > maxAge:
		return reject(ErrStale, fmt.Errorf("signed %s, appended %s: older than %s", signed.Format(time.RFC3339), logged.Format(time.RFC3339), maxAge))
	case signed.Sub(logged) > d.maxSkew:
		return reject(ErrStale, fmt.Errorf("signed %s, appended %s: more than %s in the future", signed.Format(time.RFC3339), logged.Format(time.RFC3339), d.maxSkew))
	}
	return nil
}

// authorize reports whether key may sign an event of type sp about subj:
//   - trust key events only with a trust anchor;
//   - other hub events with a hub key;
//   - cluster events with a key of the cluster the subject names.
func authorize(sp Spec, subj Subject, key Key) error {
	if key.Role != sp.Signer {
		return reject(ErrNotAuthorized, fmt.Errorf("%s key %q may not sign %s", key.Role, key.ID, sp.Type))
	}
	if sp.Topic == TopicTrust && !key.Anchor {
		return reject(ErrNotAuthorized, fmt.Errorf("key %q is not a trust anchor and may not sign %s", key.ID, sp.Type))
	}
	if sp.Signer == schemas.RoleCluster && key.Owner != subj.Cluster {
		return reject(ErrNotAuthorized, fmt.Errorf("key of cluster %q may not sign for cluster %q", key.Owner, subj.Cluster))
	}
	return nil
}
