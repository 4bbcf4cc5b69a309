package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
)

// HeaderConfigOffset is the header of a desired-state record that holds the
// offset of the config record it copies, in the same partition number of
// the config topic.
const HeaderConfigOffset = "argosy-config-offset"

// ConfigWriter appends config events the way the hub must: each event goes
// to the config topic and, for the events that describe an object, its copy
// goes to the compacted desired-state topic in the same Kafka transaction,
// keyed by the object ("cluster/kind/namespace/name"). Readers of the
// desired-state topic therefore see exactly the committed config, and a new
// agent reads its cluster's current objects from there instead of the
// config topic's whole history.
//
// A copy is the same event (id, attributes, data and trace context) with
// its partitionkey set to the object's key and signed again, so that its
// record key, its partitionkey and the partitionkey its signature covers
// are one value, as the CloudEvents Kafka binding has it.
//
// A deletion is copied too, as the signed delete event rather than a
// tombstone, so that a reader can verify every record it relies on; the
// copy stays (one small record per deleted object) until a later tombstone
// removes it.
//
// Both topics must have the same number of partitions: a cluster's records
// share a partition number on both (Partitioner).
type ConfigWriter struct {
	p  *Producer
	mu sync.Mutex // one transaction at a time on the client
}

// NewConfigWriter returns a writer on a transactional client (built with
// ProducerOpts and kgo.TransactionalID). It takes the options NewProducer
// takes.
func NewConfigWriter(client *kgo.Client, signer *Signer, topics Topics, opts ...Option) (*ConfigWriter, error) {
	if client == nil {
		return nil, errors.New("config writer: a client is required")
	}
	if id, _ := client.OptValue(kgo.TransactionalID).(string); id == "" {
		return nil, errors.New("config writer: the client needs a transactional id")
	}
	if _, ok := topics[TopicDesired]; !ok {
		return nil, errors.New("config writer: no desired-state topic configured")
	}
	p, err := NewProducer(client, signer, topics, opts...)
	if err != nil {
		return nil, err
	}
	return &ConfigWriter{p: p}, nil
}

// Write signs and appends config events in one transaction and returns
// their records (in the order of es) once the transaction is committed.
// Nothing is visible to read-committed readers if it fails. Audit records
// may go in the same transaction (the hub writes the audit record of the
// call that made a change with the change), and so may placements and
// trust events (a registration's keys go in its transaction, so that a
// refused or lost registration leaves none); none of them gets a copy.
func (w *ConfigWriter) Write(ctx context.Context, es ...*event.Event) (recs []*kgo.Record, err error) {
	for _, e := range es {
		if sp, ok := Lookup(e.Type()); !ok || (sp.Topic != TopicConfig && sp.Topic != TopicAudit && sp.Topic != TopicPlacements && sp.Topic != TopicTrust) {
			return nil, fmt.Errorf("config writer: %s is not a config, audit, placement or trust event", e.Type())
		}
	}
	recs, err = w.p.encodeAll(ctx, es)
	if err != nil {
		return nil, err
	}
	copies, of, err := w.copies(ctx, es)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cl := w.p.client
	if err := cl.BeginTransaction(); err != nil {
		return nil, fmt.Errorf("config writer: begin: %w", err)
	}
	defer func() {
		if err != nil {
			abortCtx := context.WithoutCancel(ctx)
			err = errors.Join(err, cl.AbortBufferedRecords(abortCtx), cl.EndTransaction(abortCtx, kgo.TryAbort))
		}
	}()
	// Offsets are assigned when the records are produced, before the
	// commit, so the desired-state copies can name them.
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("config writer: produce: %w", err)
	}
	for i, c := range copies {
		c.Headers = append(c.Headers, kgo.RecordHeader{Key: HeaderConfigOffset, Value: []byte(strconv.FormatInt(recs[of[i]].Offset, 10))})
	}
	if err := cl.ProduceSync(ctx, copies...).FirstErr(); err != nil {
		return nil, fmt.Errorf("config writer: produce desired state: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return nil, fmt.Errorf("config writer: commit: %w", err)
	}
	for _, e := range es {
		countType(ctx, w.p.inst.published, e.Type())
	}
	return recs, nil
}

// copies returns the desired-state copies of the signed events es, and for
// each the index in es of the event it copies. Operations are not state and
// have none; a deletion's copy is the signed delete event, not a tombstone.
// A cluster's registration (and its deregistration) is copied under the
// cluster's name, so the topic holds the fleet's membership and labels as
// well as its objects.
func (w *ConfigWriter) copies(ctx context.Context, es []*event.Event) (copies []*kgo.Record, of []int, err error) {
	for i, e := range es {
		if !StatesObject(e.Type()) {
			continue
		}
		subj, err := ParseSubject(e.Subject())
		if err != nil {
			continue
		}
		c := e.Clone()
		c.SetExtension(ExtPartitionKey, DesiredKey(subj))
		if err := w.p.signer.SignAs(ctx, &c, w.p.form); err != nil {
			return nil, nil, err
		}
		r, err := EventRecord(ctx, &c)
		if err != nil {
			return nil, nil, err
		}
		if err := checkSize(r, MaxEventBytes-len(HeaderConfigOffset)-20); err != nil {
			return nil, nil, fmt.Errorf("config writer: desired-state copy of %s: %w", e.ID(), err)
		}
		r.Topic = w.p.topics[TopicDesired]
		copies, of = append(copies, r), append(of, i)
	}
	return copies, of, nil
}

// StatesObject reports whether events of type typ state what an object or
// a cluster's registration is to be: an upsert, a deletion, a
// registration or a deregistration. The desired-state topic keeps the
// latest of these for each; operations and audit records are not.
func StatesObject(typ string) bool {
	switch typ {
	case TypeApplicationUpserted, TypeAppProjectUpserted, TypeRepositoryUpserted,
		TypeApplicationDeleted, TypeAppProjectDeleted, TypeRepositoryDeleted,
		TypeClusterRegistered, TypeClusterDeregistered:
		return true
	}
	return false
}

// DesiredKey is the desired-state topic's key of an object
// ("cluster/kind/namespace/name"), or of a cluster itself (its name) for a
// subject that names no object.
func DesiredKey(s Subject) string {
	if s.Kind == "" {
		return s.Cluster
	}
	return s.Cluster + "/" + s.Kind + "/" + s.Namespace + "/" + s.Name
}

// ConfigOffset returns the config offset a desired-state record copies.
func ConfigOffset(r *kgo.Record) (int64, error) {
	for _, h := range r.Headers {
		if h.Key == HeaderConfigOffset {
			return strconv.ParseInt(string(h.Value), 10, 64)
		}
	}
	return 0, errors.New("no " + HeaderConfigOffset + " header")
}
