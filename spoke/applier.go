package spoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// Applied is what the spoke records, durably, for every object it applied:
// the hub's generation and the config event that carried it.
type Applied struct {
	Generation int64  `json:"generation"`
	EventID    string `json:"eventId"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	Deleted    bool   `json:"deleted,omitempty"`
	// Pending marks the bootstrap's record while a bootstrap is under way.
	// An operation recorded by an agent before operations were queued
	// carries it too, and is treated as queued.
	Pending bool `json:"pending,omitempty"`
	// At is when the record was written.
	At time.Time `json:"at,omitzero"`
	// Transient marks a record the agent forgets once nothing can deliver
	// its event again (see Pruner): that of an operation or of a deleted
	// object. Only live objects are remembered for good, so the state
	// grows with what the cluster holds, not with its history.
	Transient bool `json:"transient,omitempty"`
	// Until is when a Transient record may be forgotten: after it, the
	// decoder refuses any copy of its event and of every older event of
	// the object, and an operation has expired (docs/design.md, Replays).
	Until time.Time `json:"until,omitzero"`
	// Phase is an operation's: queued until the agent writes it to Argo
	// CD, started from then (it is never written again) until it ends,
	// ended after (OperationQueued and the rest).
	Phase string `json:"phase,omitempty"`
	// Acknowledged marks a started operation whose config.applied is
	// durable: Argo CD's controller took it.
	Acknowledged bool `json:"acknowledged,omitempty"`
	// Request is the operation asked for, kept while it is open, so that
	// the Operator runs it whenever Argo CD is free, across restarts.
	Request *schemas.OperationRequested `json:"request,omitempty"`
	// TraceParent is the trace of the operation's event, which the
	// Operator's acknowledgements continue.
	TraceParent string `json:"traceparent,omitempty"`
	// Spec is the desired spec of an Application as the hub sent it, the
	// baseline drift protection restores, and SpecHash its SpecHash. They
	// live in the agent's own state, never on the object they protect, so
	// that editing the object cannot switch the protection off.
	Spec     json.RawMessage `json:"spec,omitempty"`
	SpecHash string          `json:"specHash,omitempty"`
	// Partitions is set on the agent's "partitions" record only: the
	// config topic's partition count when the agent first ran.
	Partitions int32 `json:"partitions,omitempty"`
}

// StateStore keeps Applied records where they survive a restart of the
// spoke. Put returns once the record is durable.
type StateStore interface {
	Get(ctx context.Context, key string) (Applied, bool, error)
	Put(ctx context.Context, key string, a Applied) error
}

// Pruner is a StateStore that forgets records: Prune deletes every
// Transient record for which forget returns true and returns how many it
// deleted. kube.State is one. An agent whose store is a Pruner forgets
// the records of operations and deleted objects once they are older than
// the operations' maximum age and below the committed offset of the
// config partition: no redelivery can bring their events back then, and
// an operation replayed from further back has expired.
type Pruner interface {
	Prune(ctx context.Context, forget func(key string, a Applied) bool) (int, error)
}

// Publisher appends signed events durably; *events.Producer is one.
type Publisher interface {
	Publish(ctx context.Context, es ...*event.Event) ([]*kgo.Record, error)
}

// Applier applies config events to the local Argo CD and acknowledges each:
// it is the events.Handler of the spoke's config reader.
//
// Order and idempotency: every object carries the hub's generation, and the
// applier records the generation and the event (id, partition, offset) it
// applied. A redelivery of that same event is acknowledged again and changes
// nothing. An event whose generation is not newer, or whose id was applied
// from another position (a replay), is rejected. The record is written after
// the change and before the acknowledgement, and the reader commits the
// offset only after the handler returns, so a crash at any point neither
// loses a change nor applies one twice out of order.
type Applier struct {
	budget    time.Duration // for retrying one event's transient failures
	opAge     time.Duration // the latest after its signing an operation starts
	configAge time.Duration // the decoder's maximum age of a config event
	skew      time.Duration // and how far ahead of the log its signer may be
	// ops is argo's way to run syncs and rollbacks one at a time, if it
	// has one: they are then queued for the Operator, woken by wake.
	ops     Operations
	wake    chan struct{}
	cluster string
	source  string // of the acknowledgements
	argo    ArgoCD
	state   StateStore
	publish Publisher
	sealing events.SealingKey // opens repository credentials sealed to this cluster
	log     *slog.Logger
	inst    *instruments
	tracer  trace.Tracer

	// mu makes Handle one event at a time: the config reader and a
	// recovery from the desired-state topic both call it.
	mu sync.Mutex
}

// newApplier returns the applier of cluster's config events: it applies
// them to argo, records what it applied in state, and acknowledges each
// through pub. sealing opens the repository credentials sealed to the
// cluster. It takes the WithApplyBudget, WithOperationMaxAge,
// WithStaleness, WithLogger and WithMeterProvider options. When argo is
// also an Operations, syncs and rollbacks are queued for the applier's
// Operator, which must run for them to start.
func newApplier(cluster string, argo ArgoCD, state StateStore, pub Publisher, sealing events.SealingKey, opts ...Option) (*Applier, error) {
	if cluster == "" || argo == nil || state == nil || pub == nil {
		return nil, errors.New("applier: a cluster, an Argo CD, a state store and a publisher are required")
	}
	o := newOptions(opts)
	if o.applyBudget <= 0 || o.operationAge <= 0 || o.configAge <= 0 || o.skew < 0 {
		return nil, errors.New("applier: the apply budget, the operations' age and the config events' age must be positive")
	}
	ops, _ := argo.(Operations)
	return &Applier{budget: o.applyBudget, opAge: o.operationAge, configAge: o.configAge, skew: o.skew, ops: ops, wake: make(chan struct{}, 1),
		cluster: cluster, source: Source(cluster), argo: argo, state: state, publish: pub, sealing: sealing,
		log: o.Log, inst: newInstruments(o.Meters), tracer: o.Tracers.Tracer(instrumentation)}, nil
}

// Source is the CloudEvents source of the events an agent of cluster
// publishes.
func Source(cluster string) string { return "//argosy.dev/spoke/" + cluster }

// change is one config event turned into what to do.
type change struct {
	key  string
	res  schemas.Resource
	kind string // for the subject of the acknowledgement
	do   func(ctx context.Context) error
	// delete marks a change that removes the object.
	delete bool
	// op is set for an operation, which runs at most once and expires.
	op *schemas.OperationRequested
	// spec is an Application's desired spec, the baseline of drift
	// protection.
	spec json.RawMessage
}

// record is what the state keeps of c, applied from d.
func (a *Applier) record(d *events.Decoded, c *change) Applied {
	r := Applied{Generation: c.res.Generation, EventID: d.Event.ID(), Partition: d.Partition, Offset: d.Offset, Deleted: c.delete,
		At: time.Now().UTC(), Transient: c.delete || c.op != nil}
	switch {
	case c.op != nil:
		r.Until = a.expiry(d, c.op).Add(a.skew)
	case c.delete:
		r.Until = d.Event.Time().Add(a.configAge + a.skew).UTC()
	}
	if c.spec != nil {
		r.Spec, r.SpecHash = c.spec, argocd.SpecHash(c.spec)
	}
	return r
}

// Handle implements events.Handler.
func (a *Applier) Handle(ctx context.Context, d *events.Decoded) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, err := a.change(d)
	if err != nil {
		return a.reject(ctx, d, schemas.Resource{Cluster: a.cluster}, "", schemas.RejectInvalid, err)
	}
	if c == nil { // nothing to apply (cluster registration): acknowledge
		return a.ack(ctx, d, schemas.Resource{Cluster: a.cluster, Name: a.cluster}, "")
	}
	prev, seen, err := a.state.Get(ctx, c.key)
	if err != nil {
		return err // retry: the state is not readable now
	}
	if seen && prev.EventID == d.Event.ID() {
		if prev.Partition != d.Partition || prev.Offset != d.Offset {
			return a.reject(ctx, d, c.res, c.kind, schemas.RejectReplay,
				fmt.Errorf("event %s was applied from %d@%d; this copy at %d@%d is a replay", d.Event.ID(), prev.Partition, prev.Offset, d.Partition, d.Offset))
		}
		if prev.Phase != "" {
			return nil // a redelivery of a queued operation: the Operator has it
		}
		if !prev.Pending || !a.queues(c) {
			return a.done(ctx, d, c) // a redelivery: already applied
		}
		// An operation an older agent recorded before performing it: the
		// Operator finds out from Argo CD whether it ran.
	}
	if seen && c.op != nil && prev.EventID != d.Event.ID() {
		return a.reject(ctx, d, c.res, c.kind, schemas.RejectReplay,
			fmt.Errorf("request %s was asked for by event %s at %d@%d: a request runs once", c.op.RequestID, prev.EventID, prev.Partition, prev.Offset))
	}
	if seen && c.op == nil && c.res.Generation <= prev.Generation {
		return a.reject(ctx, d, c.res, c.kind, schemas.RejectStale,
			fmt.Errorf("generation %d is not newer than applied generation %d", c.res.Generation, prev.Generation))
	}
	if c.op != nil {
		if err := a.expired(d, c.op); err != nil {
			code := schemas.RejectStale // read too late
			if replayed(d, c.op) {
				code = schemas.RejectReplay // appended too late: a copy
			}
			return a.reject(ctx, d, c.res, c.kind, code, err)
		}
		if a.queues(c) {
			return a.enqueue(ctx, d, c, prev, seen)
		}
	}
	if err := a.perform(ctx, d, c); err != nil {
		var conflict *ConflictError
		switch {
		case errors.As(err, &conflict):
			return a.reject(ctx, d, c.res, c.kind, schemas.RejectConflict, err)
		case ctx.Err() != nil || errors.Is(err, errStateUnreadable):
			return err // stopping, or the cluster's API is down: the reader tries again
		}
		return a.reject(ctx, d, c.res, c.kind, schemas.RejectApplyFailed, err)
	}
	return a.done(ctx, d, c)
}

// done records that c was applied from d and acknowledges it.
func (a *Applier) done(ctx context.Context, d *events.Decoded, c *change) error {
	if err := a.state.Put(ctx, c.key, a.record(d, c)); err != nil {
		return err
	}
	return a.ack(ctx, d, c.res, c.kind)
}

// expiry is when op stops being wanted: its own expiry, but no later than
// the operations' maximum age after it was signed. The state remembers an
// operation until after it (Applied.Until), so a copy appended later is
// refused either way.
func (a *Applier) expiry(d *events.Decoded, op *schemas.OperationRequested) time.Time {
	return events.OperationExpiry(d.Event.Time(), op, a.opAge).UTC()
}

// replayed reports whether op was appended after its expiry by the replay
// rule every reader of the log applies, the projector too
// (events.OperationMaxAge; docs/design.md, Replays), whatever this agent's
// own maximum age: a copy.
func replayed(d *events.Decoded, op *schemas.OperationRequested) bool {
	return d.LogTime.After(events.OperationExpiry(d.Event.Time(), op, events.OperationMaxAge))
}

// expired refuses an operation appended to the log or read after its
// expiry.
func (a *Applier) expired(d *events.Decoded, op *schemas.OperationRequested) error {
	exp := a.expiry(d, op)
	now := time.Now()
	if !now.After(exp) && !d.LogTime.After(exp) {
		return nil
	}
	return fmt.Errorf("operation %s expired at %s (appended %s, read %s): not performed", op.RequestID, exp.Format(time.RFC3339),
		d.LogTime.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
}

// operation is the Argo CD operation p asks for. A rollback's history id
// is present (change refuses one without); 0 is Argo CD's first entry.
func operation(p *schemas.OperationRequested) Operation {
	op := Operation{RequestID: p.RequestID, Kind: p.Operation, RequestedBy: p.RequestedBy, Revision: p.Revision, Prune: p.Prune,
		DryRun: p.DryRun, RefreshType: p.RefreshType}
	if p.HistoryID != nil {
		op.HistoryID = *p.HistoryID
	}
	return op
}

// queues reports whether c is an operation the Operator runs: a sync or a
// rollback, on an Argo CD that runs them one at a time (Operations). A
// refresh or a terminate takes effect at once and is harmless to repeat.
func (a *Applier) queues(c *change) bool {
	if c.op == nil || a.ops == nil {
		return false
	}
	return c.op.Operation == schemas.OperationSync || c.op.Operation == schemas.OperationRollback
}

// enqueue records, durably, the operation c asks for as queued, for the
// Operator to start when Argo CD is free. It is acknowledged when Argo CD
// takes it (applied) and again when it ends (operation.completed).
//
// The record is written only over the one Handle read (prev, if seen), so
// that an agent that froze in between never queues again an operation
// another agent moved on; the event is then handled again.
func (a *Applier) enqueue(ctx context.Context, d *events.Decoded, c *change, prev Applied, seen bool) error {
	r := a.record(d, c)
	r.Phase, r.Request, r.TraceParent = OperationQueued, c.op, d.TraceParent
	st, ok := a.state.(OperationStore)
	if !ok {
		return a.state.Put(ctx, c.key, r)
	}
	swapped, err := st.Swap(ctx, c.key, r, func(cur Applied, found bool) bool {
		return found == seen && (!seen || cur.EventID == prev.EventID && cur.Phase == prev.Phase)
	})
	if err != nil {
		return err
	}
	if !swapped {
		return fmt.Errorf("request %s: its record changed while it was read; reading it again", c.op.RequestID)
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// errStateUnreadable means an apply ran out of its retry budget while the
// agent's own state could not be read either: the cluster's API server is
// down, not the event at fault. The event is retried, not rejected.
var errStateUnreadable = errors.New("the spoke's state is unreadable too")

// perform does c's change. It retries what argocd.Transient says may pass,
// with backoff, for at most the apply budget; an error that retrying cannot
// fix (the object is invalid, it or its namespace does not exist, the agent
// may not do it) it returns at once, so that the event is rejected and the
// partition goes on. When the budget runs out it reads the agent's own
// state: if that fails too, the API server is down and the event waits
// for it (errStateUnreadable); if not, the event is at fault.
func (a *Applier) perform(ctx context.Context, d *events.Decoded, c *change) error {
	deadline, attempts := time.Now().Add(a.budget), 0
	err := retry(ctx, a.log, "apply "+d.Event.ID(), func(err error) bool { return argocd.Transient(err) && time.Now().Before(deadline) },
		func() error { attempts++; return c.do(ctx) })
	if err == nil || ctx.Err() != nil || !argocd.Transient(err) {
		return err
	}
	if _, _, serr := a.state.Get(ctx, c.key); serr != nil { // the budget ran out
		return fmt.Errorf("%w: %w", errStateUnreadable, errors.Join(err, serr))
	}
	return fmt.Errorf("gave up after %d attempts in %s: %w", attempts, a.budget, err)
}

// key is the state key of an object.
func key(kind string, r schemas.Resource) string { return kind + "." + r.Namespace + "." + r.Name }

// objectKey is the state key of the object a deletion removes.
func objectKey(d *events.Decoded) (string, bool) {
	switch p := d.Data.(type) {
	case *schemas.ApplicationDeleted:
		return key(KindApplication, p.Resource), true
	case *schemas.AppProjectDeleted:
		return key(KindAppProject, p.Resource), true
	case *schemas.RepositoryDeleted:
		return key(KindRepository, p.Resource), true
	}
	return "", false
}

// change maps a config event to its state key and its effect.
func (a *Applier) change(d *events.Decoded) (*change, error) {
	switch p := d.Data.(type) {
	case *schemas.ApplicationUpserted:
		obj := &Object{Ref: Ref{Kind: KindApplication, Namespace: p.Namespace, Name: p.Name}, Labels: p.Labels, Annotations: commitAnnotations(p),
			Spec: p.Spec, Generation: p.Generation, Adopt: p.Adopt}
		return &change{key: key(KindApplication, p.Resource), res: p.Resource, kind: schemas.SubjectApplications, spec: p.Spec,
			do: func(ctx context.Context) error { return a.argo.Apply(ctx, obj) }}, nil
	case *schemas.ApplicationDeleted:
		ref := Ref{Kind: KindApplication, Namespace: p.Namespace, Name: p.Name}
		return &change{key: key(KindApplication, p.Resource), res: p.Resource, kind: schemas.SubjectApplications, delete: true,
			do: func(ctx context.Context) error { return a.argo.Delete(ctx, ref, p.Cascade) }}, nil
	case *schemas.AppProjectUpserted:
		obj := &Object{Ref: Ref{Kind: KindAppProject, Namespace: p.Namespace, Name: p.Name}, Labels: p.Labels, Spec: p.Spec, Generation: p.Generation}
		return &change{key: key(KindAppProject, p.Resource), res: p.Resource, kind: schemas.SubjectAppProjects,
			do: func(ctx context.Context) error { return a.argo.Apply(ctx, obj) }}, nil
	case *schemas.AppProjectDeleted:
		ref := Ref{Kind: KindAppProject, Namespace: p.Namespace, Name: p.Name}
		return &change{key: key(KindAppProject, p.Resource), res: p.Resource, kind: schemas.SubjectAppProjects, delete: true,
			do: func(ctx context.Context) error { return a.argo.Delete(ctx, ref, false) }}, nil
	case *schemas.RepositoryUpserted:
		obj, err := a.repository(p)
		if err != nil {
			return nil, err
		}
		return &change{key: key(KindRepository, p.Resource), res: p.Resource, kind: schemas.SubjectRepositories,
			do: func(ctx context.Context) error { return a.argo.Apply(ctx, obj) }}, nil
	case *schemas.RepositoryDeleted:
		ref := Ref{Kind: KindRepository, Namespace: p.Namespace, Name: p.Name}
		return &change{key: key(KindRepository, p.Resource), res: p.Resource, kind: schemas.SubjectRepositories, delete: true,
			do: func(ctx context.Context) error { return a.argo.Delete(ctx, ref, false) }}, nil
	case *schemas.OperationRequested:
		if p.Operation == schemas.OperationRollback && p.HistoryID == nil {
			return nil, fmt.Errorf("rollback %s names no historyId to roll back to", p.RequestID)
		}
		ref, op := Ref{Kind: KindApplication, Namespace: p.Namespace, Name: p.Name}, operation(p)
		return &change{key: "Operation." + p.RequestID, res: p.Resource, kind: schemas.SubjectApplications, op: p,
			do: func(ctx context.Context) error { return a.argo.Operate(ctx, ref, op) }}, nil
	case *schemas.ClusterRegistered, *schemas.ClusterDeregistered:
		return nil, nil
	}
	return nil, fmt.Errorf("the spoke does not apply %s", d.Spec.Type)
}

// repository opens the sealed credentials: they are decrypted here, in the
// cluster they were sealed to, and nowhere else.
func (a *Applier) repository(p *schemas.RepositoryUpserted) (*Object, error) {
	data := map[string]string{"url": p.URL, "type": p.Type}
	if p.Project != "" {
		data["project"] = p.Project
	}
	if p.Credentials != nil {
		plain, err := events.Open(*p.Credentials, a.sealing)
		if err != nil {
			return nil, fmt.Errorf("repository %s credentials: %w", p.Name, err)
		}
		var creds map[string]string
		if err := json.Unmarshal(plain, &creds); err != nil {
			return nil, fmt.Errorf("repository %s credentials are not a JSON object of strings: %w", p.Name, err)
		}
		for k, v := range creds {
			data[k] = v
		}
	}
	return &Object{Ref: Ref{Kind: KindRepository, Namespace: p.Namespace, Name: p.Name}, Data: data, Generation: p.Generation}, nil
}

func (a *Applier) subject(res schemas.Resource, kind string) string {
	if kind == "" {
		return events.Subject{Cluster: a.cluster}.String()
	}
	return events.Subject{Cluster: a.cluster, Kind: kind, Namespace: res.Namespace, Name: res.Name}.String()
}

// named fills in the acknowledgement's resource when the event named none.
func (a *Applier) named(res schemas.Resource) schemas.Resource {
	res.Cluster = a.cluster
	if res.Name == "" {
		res.Name = a.cluster
	}
	return res
}

func (a *Applier) ack(ctx context.Context, d *events.Decoded, res schemas.Resource, kind string) error {
	res = a.named(res)
	e, err := events.New(a.source, events.TypeConfigApplied, a.subject(res, kind), a.cluster,
		schemas.ConfigApplied{Resource: res, EventID: d.Event.ID(), Offset: d.Offset})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := a.publish.Publish(events.ContextWithTrace(ctx, d), e); err != nil {
		return err // retried by the reader until the acknowledgement is durable
	}
	a.inst.acknowledged(ctx, "")
	return nil
}

// Refused acknowledges a record of this cluster's partition that failed
// verification or decoding as rejected (code unverified), naming what the
// unverified record claims to be. It is the config reader's OnRefused.
func (a *Applier) Refused(ctx context.Context, rec *kgo.Record, reason error) error {
	id := "unknown"
	res := schemas.Resource{Cluster: a.cluster}
	kind := ""
	if e, err := events.ParseRecord(ctx, rec); err == nil {
		id = e.ID()
		if subj, err := events.ParseSubject(e.Subject()); err == nil && subj.Kind != "" {
			res.Namespace, res.Name, kind = subj.Namespace, subj.Name, subj.Kind
		}
	}
	res = a.named(res)
	e, err := events.New(a.source, events.TypeConfigRejected, a.subject(res, kind), a.cluster,
		schemas.ConfigRejected{Resource: res, EventID: id, Offset: rec.Offset, Code: schemas.RejectUnverified,
			Reason: events.Reason(reason) + ": " + reason.Error()})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := a.publish.Publish(ctx, e); err != nil {
		return err
	}
	a.inst.acknowledged(ctx, schemas.RejectUnverified)
	return nil
}

// reject acknowledges d as rejected and returns a poison error, so that the
// reader dead-letters it and moves on.
func (a *Applier) reject(ctx context.Context, d *events.Decoded, res schemas.Resource, kind, code string, cause error) error {
	res = a.named(res)
	a.log.WarnContext(ctx, "config event rejected", "id", d.Event.ID(), "type", d.Spec.Type, "code", code, "err", cause)
	e, err := events.New(a.source, events.TypeConfigRejected, a.subject(res, kind), a.cluster,
		schemas.ConfigRejected{Resource: res, EventID: d.Event.ID(), Offset: d.Offset, Code: code, Reason: cause.Error()})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := a.publish.Publish(events.ContextWithTrace(ctx, d), e); err != nil {
		return err
	}
	a.inst.acknowledged(ctx, code)
	return events.Poison(fmt.Errorf("%s: %w", code, cause))
}

// commitAnnotations are an upserted Application's annotations, with its
// source commit, if the change names one: the recorder finds them on the
// Application when that revision is deployed.
func commitAnnotations(p *schemas.ApplicationUpserted) map[string]string {
	if p.Commit == nil {
		return p.Annotations
	}
	out := maps.Clone(p.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[argocd.AnnotationCommitRevision] = p.Commit.Revision
	out[argocd.AnnotationCommitTime] = p.Commit.CommittedAt.UTC().Format(time.RFC3339Nano)
	return out
}
