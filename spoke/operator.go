package spoke

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// Phases of an operation in the agent's state (Applied.Phase).
const (
	// OperationQueued: recorded, waiting for Argo CD to be free.
	OperationQueued = "queued"
	// OperationStarted: Argo CD took it; acknowledged applied.
	OperationStarted = "started"
	// OperationEnded: it ended (operation.completed) or was rejected.
	OperationEnded = "ended"
)

// OperationStore is a StateStore that lists the records of open
// operations, queued or started, and writes a record only if the one
// stored is still the one read (Swap stores a when was accepts the stored
// record, and reports whether it did). kube.State is one.
type OperationStore interface {
	StateStore
	OpenOperations(ctx context.Context) (map[string]Applied, error)
	Swap(ctx context.Context, key string, a Applied, was func(cur Applied, found bool) bool) (bool, error)
}

// Operator runs the syncs and rollbacks its Applier queued, as Argo CD
// runs them: one at a time per Application, in the order they were asked
// for. It starts the next one only when Argo CD is free (no operation
// waits in the Application's operation field, none runs), acknowledges it
// applied when Argo CD takes it, and publishes operation.completed with
// Argo CD's own result when it ends. One that expires before Argo CD is
// free, or that Argo CD cannot take (no such Application or history
// entry, a namespace the agent may not touch), is rejected.
//
// Everything it knows is in the state, so a restart anywhere loses
// nothing: an operation is started only after the state is read again and
// still says queued, and only on the version of the Application that was
// read before (Operations.Start), so two agents of one cluster — one
// frozen and thawed after the other took over — never both start it.
// It records an operation started once it wrote it; while that record
// cannot be stored, it keeps in memory that it wrote it, so that an
// operation Argo CD ran and another hid meanwhile is not written again.
// What it cannot know are the cases left: the agent stopped between the
// write and the record, or lost the write's answer, and before it looks
// again, Argo CD ran the operation and another operation hid it; it is
// then written again.
type Operator struct {
	a    *Applier
	ops  Operations
	st   OperationStore
	poll time.Duration
	log  *slog.Logger
	// written holds, by state key, the event id of each operation this
	// agent wrote to Argo CD whose record as started could not be
	// stored yet (the state was away): it is not written again. An
	// entry goes once the record is stored, or is no longer open. Only
	// Run's loop reads and writes it.
	written map[string]string
}

// operatorPoll is how often the Operator looks at Argo CD while
// operations are open.
const operatorPoll = time.Second

// operator returns the runner of the operations a queues. It fails if a's
// Argo CD runs no Operations or its state lists no open operations.
func (a *Applier) operator() (*Operator, error) {
	st, ok := a.state.(OperationStore)
	if a.ops == nil || !ok {
		return nil, errors.New("operator: the Argo CD must run Operations and the state must be an OperationStore")
	}
	return &Operator{a: a, ops: a.ops, st: st, poll: operatorPoll, log: a.log, written: map[string]string{}}, nil
}

// Run runs the open operations until ctx ends, then returns nil. It
// looks at Argo CD every second while any is open, and otherwise waits
// for the Applier to queue one.
func (o *Operator) Run(ctx context.Context) error {
	for {
		n, err := o.step(ctx)
		if err != nil && ctx.Err() == nil {
			o.log.WarnContext(ctx, "operations: will try again", "err", err)
		}
		if !o.wait(ctx, n > 0 || err != nil) {
			return nil
		}
	}
}

// wait returns when the Applier queues an operation, or after the poll
// interval if busy; false when ctx ends.
func (o *Operator) wait(ctx context.Context, busy bool) bool {
	var tick <-chan time.Time
	if busy {
		t := time.NewTimer(o.poll)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-tick:
	case <-o.a.wake:
	}
	return true
}

// opRecord is an open operation and its state key.
type opRecord struct {
	key string
	Applied
}

// step moves each Application's open operations on as far as Argo CD
// lets them. An Application whose Argo CD cannot be read now waits; the
// others go on. Behind an operation that must wait, the queued ones that
// expired are rejected at once.
func (o *Operator) step(ctx context.Context) (int, error) {
	open, err := o.st.OpenOperations(ctx)
	if err != nil {
		return 0, err
	}
	o.a.inst.operations(ctx, len(open))
	for k := range o.written {
		if r, ok := open[k]; !ok || r.EventID != o.written[k] {
			delete(o.written, k) // moved on by another agent
		}
	}
	byApp := map[Ref][]opRecord{}
	var errs []error
	for k, r := range open {
		if r.Request == nil { // not a record the Applier wrote: nothing to run
			o.log.WarnContext(ctx, "an open operation names no request; ended", "key", k)
			errs = append(errs, o.put(ctx, opRecord{key: k, Applied: r}, OperationEnded))
			continue
		}
		ref := Ref{Kind: KindApplication, Namespace: r.Request.Namespace, Name: r.Request.Name}
		byApp[ref] = append(byApp[ref], opRecord{key: k, Applied: r})
	}
	for ref, recs := range byApp {
		slices.SortFunc(recs, func(x, y opRecord) int {
			return cmp.Or(cmp.Compare(x.Partition, y.Partition), cmp.Compare(x.Offset, y.Offset))
		})
		blocked := false
		for _, r := range recs {
			var err error
			switch {
			case !blocked:
				var next bool
				next, err = o.advance(ctx, ref, r)
				blocked = !next
			case r.Phase == OperationQueued && o.expired(r):
				err = o.reject(ctx, r, schemas.RejectStale, fmt.Errorf("operation %s expired at %s, waiting for the one before it",
					r.Request.RequestID, o.expiry(r).Format(time.RFC3339)))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("operation %s on %s/%s: %w", r.Request.RequestID, ref.Namespace, ref.Name, err))
			}
		}
	}
	return len(byApp), errors.Join(errs...)
}

// expiry is when r's operation stops being wanted, and expired whether
// that has passed.
func (o *Operator) expiry(r opRecord) time.Time { return r.Until.Add(-o.a.skew) }
func (o *Operator) expired(r opRecord) bool     { return time.Now().After(o.expiry(r)) }

// wrote reports whether the agent wrote r to Argo CD, or saw it there,
// while its record could not say so yet.
func (o *Operator) wrote(r opRecord) bool {
	id, ok := o.written[r.key]
	return ok && id == r.EventID
}

// advance moves r on and reports whether it ended (and that is recorded),
// so that the next operation of the Application may go.
func (o *Operator) advance(ctx context.Context, ref Ref, r opRecord) (bool, error) {
	ctx = events.ContextWithTrace(ctx, &events.Decoded{TraceParent: r.TraceParent})
	st, err := o.ops.Inspect(ctx, ref, r.Request.RequestID)
	if err != nil {
		if ctx.Err() != nil || argocd.Transient(err) {
			return false, err
		}
		// Argo CD's answer, for good: the agent may not read the
		// Application's namespace, say.
		if r.Phase == OperationStarted {
			err = o.complete(ctx, r, OperationState{Phase: schemas.OperationPhaseUnknown, Message: err.Error()})
		} else {
			err = o.reject(ctx, r, schemas.RejectApplyFailed, err)
		}
		return err == nil, err
	}
	switch {
	case st.Ended:
		err = o.complete(ctx, r, st)
		return err == nil, err
	case st.Taken:
		return false, o.took(ctx, r)
	case st.Waiting:
		return o.waiting(ctx, ref, r, st)
	case r.Phase == OperationStarted || o.wrote(r):
		// Written to Argo CD, and gone: an operation that was not the
		// agent's followed it before its end was read, or the
		// Application went.
		st.Phase, st.Message = schemas.OperationPhaseUnknown, "the Application shows another operation; this one's result was not read"
		if !st.Exists {
			st.Message = "the Application was deleted before this operation's result was read"
		}
		err = o.complete(ctx, r, st)
		return err == nil, err
	case !st.Exists:
		err = o.reject(ctx, r, schemas.RejectApplyFailed, fmt.Errorf("application %s/%s not found", ref.Namespace, ref.Name))
		return err == nil, err
	case o.expired(r):
		err = o.reject(ctx, r, schemas.RejectStale, fmt.Errorf("operation %s expired at %s before Argo CD was free to start it",
			r.Request.RequestID, o.expiry(r).Format(time.RFC3339)))
		return err == nil, err
	case st.Busy:
		return false, nil // Argo CD runs another: wait for its end
	}
	return false, o.start(ctx, ref, r, st.Version)
}

// took records that Argo CD's controller took r, if the state does not say
// so yet, and acknowledges it applied, once.
func (o *Operator) took(ctx context.Context, r opRecord) error {
	if r.Phase != OperationStarted { // written before a crash, or its answer lost
		o.written[r.key] = r.EventID
		if err := o.put(ctx, r, OperationStarted); err != nil {
			return err
		}
		r.Phase = OperationStarted
	}
	if r.Acknowledged {
		return nil
	}
	if err := o.acknowledge(ctx, r); err != nil {
		return err
	}
	next := r.Applied
	next.Acknowledged, next.At = true, time.Now().UTC()
	return o.swap(ctx, r, next)
}

// waiting handles r while it sits in the Application's operation field,
// not yet taken by Argo CD's controller: past its expiry it is withdrawn
// and rejected, so that it never runs late.
func (o *Operator) waiting(ctx context.Context, ref Ref, r opRecord, st OperationState) (bool, error) {
	if r.Phase != OperationStarted { // written before a crash, or its answer lost
		// Seen in Argo CD, it is written: kept in memory until the
		// record is stored, as start does.
		o.written[r.key] = r.EventID
		if err := o.put(ctx, r, OperationStarted); err != nil {
			return false, err
		}
	}
	if !o.expired(r) {
		return false, nil
	}
	switch err := o.ops.Withdraw(ctx, ref, r.Request.RequestID, st.Version); {
	case errors.Is(err, ErrChanged):
		return false, nil // look again
	case err != nil:
		return false, err
	}
	err := o.reject(ctx, r, schemas.RejectStale, fmt.Errorf("operation %s expired at %s before Argo CD's controller took it; withdrawn",
		r.Request.RequestID, o.expiry(r).Format(time.RFC3339)))
	return err == nil, err
}

// start writes r to the Application at version, if the state still says
// it is queued (an agent that took over meanwhile may have moved it on),
// and records it started at once: from then on it is never written again.
func (o *Operator) start(ctx context.Context, ref Ref, r opRecord, version string) error {
	cur, ok, err := o.st.Get(ctx, r.key)
	if err != nil {
		return err
	}
	if !ok || cur.EventID != r.EventID || cur.Phase != OperationQueued {
		return nil // moved on by another: the next step sees where
	}
	p := r.Request
	op := operation(p)
	ctx, span := o.a.tracer.Start(ctx, "spoke.operation.start", trace.WithAttributes(attribute.String("argosy.request", p.RequestID),
		attribute.String("argosy.operation", p.Operation), attribute.String("argosy.application", ref.Namespace+"/"+ref.Name)))
	defer span.End()
	err = o.ops.Start(ctx, ref, op, version)
	if err != nil && !errors.Is(err, ErrChanged) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	switch {
	case errors.Is(err, ErrChanged):
		return nil // look again
	case err != nil && (ctx.Err() != nil || argocd.Transient(err)):
		return err
	case err != nil:
		return o.reject(ctx, r, schemas.RejectApplyFailed, err)
	}
	o.log.DebugContext(ctx, "operation started", "request", p.RequestID, "application", ref.Namespace+"/"+ref.Name)
	// Until the record is stored, the agent keeps in memory that it
	// wrote it: Argo CD may run it and another operation hide it
	// meanwhile, and the record would still say queued.
	o.written[r.key] = r.EventID
	return o.put(ctx, r, OperationStarted)
}

// acknowledge publishes config.applied for r: Argo CD took it.
func (o *Operator) acknowledge(ctx context.Context, r opRecord) error {
	e, err := events.New(o.a.source, events.TypeConfigApplied, o.subject(r), o.a.cluster,
		schemas.ConfigApplied{Resource: o.resource(r), EventID: r.EventID, Offset: r.Offset})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := o.a.publish.Publish(ctx, e); err != nil {
		return err
	}
	o.a.inst.acknowledged(ctx, "")
	return nil
}

// complete publishes r's end with Argo CD's result, then records it ended.
func (o *Operator) complete(ctx context.Context, r opRecord, st OperationState) error {
	if st.Taken && !r.Acknowledged { // it ran while the agent was not looking
		if err := o.acknowledge(ctx, r); err != nil {
			return err
		}
	}
	p := r.Request
	e, err := events.New(o.a.source, events.TypeOperationCompleted, o.subject(r), o.a.cluster,
		schemas.OperationCompleted{Resource: o.resource(r), EventID: r.EventID, Offset: r.Offset, RequestID: p.RequestID,
			Operation: p.Operation, Phase: cmp.Or(st.Phase, schemas.OperationPhaseUnknown), Message: st.Message, Revision: st.Revision,
			StartedAt: st.StartedAt, FinishedAt: st.FinishedAt})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := o.a.publish.Publish(ctx, e); err != nil {
		return err
	}
	o.a.inst.completed(ctx, cmp.Or(st.Phase, schemas.OperationPhaseUnknown))
	o.log.DebugContext(ctx, "operation ended", "request", p.RequestID, "phase", st.Phase)
	return o.put(ctx, r, OperationEnded)
}

// reject acknowledges r rejected, then records it ended.
func (o *Operator) reject(ctx context.Context, r opRecord, code string, cause error) error {
	o.log.WarnContext(ctx, "operation rejected", "request", r.Request.RequestID, "code", code, "err", cause)
	e, err := events.New(o.a.source, events.TypeConfigRejected, o.subject(r), o.a.cluster,
		schemas.ConfigRejected{Resource: o.resource(r), EventID: r.EventID, Offset: r.Offset, Code: code, Reason: cause.Error()})
	if err != nil {
		return events.Fatal(err)
	}
	if _, err := o.a.publish.Publish(ctx, e); err != nil {
		return err
	}
	o.a.inst.acknowledged(ctx, code)
	return o.put(ctx, r, OperationEnded)
}

// put records r in phase; an ended operation keeps only what the state
// needs to refuse its event again until it expired.
func (o *Operator) put(ctx context.Context, r opRecord, phase string) error {
	next := r.Applied
	next.Phase, next.At = phase, time.Now().UTC()
	if phase == OperationEnded {
		next.Request, next.TraceParent = nil, ""
	}
	return o.swap(ctx, r, next)
}

// swap writes next over r, only if the state still holds r as it was read:
// an agent that froze and thawed after another moved the operation on
// writes nothing.
//
// It runs after an acknowledgement is durable, so it is not cut short by
// ctx ending (a graceful stop): a record left behind would acknowledge the
// operation again after the restart.
func (o *Operator) swap(ctx context.Context, r opRecord, next Applied) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	swapped, err := o.st.Swap(ctx, r.key, next, func(cur Applied, found bool) bool {
		return found && cur.EventID == r.EventID && cur.Phase == r.Phase && cur.Acknowledged == r.Acknowledged
	})
	if err == nil && !swapped {
		o.log.DebugContext(ctx, "operation moved on by another agent", "key", r.key)
	}
	if err == nil {
		delete(o.written, r.key) // recorded past queued, or moved on by another
	}
	return err
}

func (o *Operator) resource(r opRecord) schemas.Resource {
	return o.a.named(r.Request.Resource)
}

func (o *Operator) subject(r opRecord) string {
	return o.a.subject(o.resource(r), schemas.SubjectApplications)
}
