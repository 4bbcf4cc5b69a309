package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
)

// maxCommitLinks bounds the links from a commit span to the fold spans it
// stores: OpenTelemetry's SDK keeps 128 links per span by default.
const maxCommitLinks = 128

// Folder takes the projector's fold step: it loads the rows a batch of
// events needs from its Store, applies each event to its working set
// (Apply), and commits the rows that changed with the offsets the batch
// reached, in one store transaction. It needs no consumer group: the live
// Runner feeds it what it polls, and a rebuild from any range of the log
// feeds it what it reads, so both fold with the same code.
//
// A Folder is not safe for concurrent use. Its working set caches rows it
// read or wrote; call Forget when another writer may have changed them
// (the Runner does after a rebalance).
type Folder struct {
	store  Store
	view   *View
	tracer trace.Tracer
	links  []trace.Link // fold spans since the last commit
	// expect is the stored offset each partition's next step begins at,
	// where known: Commit sends it as the batch's From.
	expect map[Partition]int64
}

// NewFolder returns a Folder over store. It takes the WithTracerProvider
// option.
func NewFolder(store Store, opts ...Option) (*Folder, error) {
	if store == nil {
		return nil, errors.New("projector: a store is required")
	}
	return &Folder{store: store, view: NewView(), tracer: newOptions(opts).tracer(), expect: map[Partition]int64{}}, nil
}

// Step is one batch of the log to fold.
type Step struct {
	// Events are the events to fold, in offset order within each
	// partition.
	Events []*events.Decoded
	// Passed are records that hold nothing to fold: transaction markers,
	// and records refused (and dead-lettered) before folding. The step's
	// offsets move past them.
	Passed []Position
}

// Position is one record's place in the log.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Folded is what Fold did with a Step.
type Folded struct {
	// Types are the types of the events folded, one per event.
	Types []string
	// Refused are events the fold cannot take (a spec that is not JSON,
	// say). Their offsets pass like the others'; the caller dead-letters
	// them before Commit, as it does bad input.
	Refused []Refusal
}

// Refusal is an event of a Step the fold refused, and why.
type Refusal struct {
	// Index is the event's index in Step.Events.
	Index int
	Err   error
}

// Fold loads the rows s needs that the working set does not hold, then
// applies s's events in order. Nothing is stored until Commit. An error
// means the rows could not be loaded; the working set is then as before.
func (f *Folder) Fold(ctx context.Context, s Step) (Folded, error) {
	for _, p := range s.Passed {
		f.view.Advance(p.Topic, p.Partition, p.Offset)
	}
	if err := f.load(ctx, s.Events); err != nil {
		return Folded{}, err
	}
	out := Folded{Types: make([]string, 0, len(s.Events))}
	for i, d := range s.Events {
		if err := f.apply(ctx, d); err != nil {
			out.Refused = append(out.Refused, Refusal{Index: i, Err: events.Poison(err)})
			f.view.Advance(d.Topic, d.Partition, d.Offset)
			continue
		}
		out.Types = append(out.Types, d.Spec.Type)
	}
	return out, nil
}

// apply folds one event in a span that continues the trace the event
// carries, so a change can be followed from the CLI to the views.
func (f *Folder) apply(ctx context.Context, d *events.Decoded) error {
	_, span := f.tracer.Start(events.ContextWithTrace(ctx, d), "projector.fold "+d.Spec.Type,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.destination.name", d.Topic),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(int(d.Partition))),
			attribute.Int64("messaging.kafka.offset", d.Offset),
			attribute.String("cloudevents.event_id", d.Event.ID())))
	defer span.End()
	err := Apply(f.view, d)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "dead-lettered: the fold cannot take it")
	}
	if len(f.links) < maxCommitLinks {
		f.links = append(f.links, trace.Link{SpanContext: span.SpanContext()})
	}
	return err
}

// Commit writes the rows changed since the last Commit, with the offsets
// reached, in one store transaction, in a span linked to the folds it
// stores. If the store refuses, the working set is dropped: the caller
// folds the same records again from the store's offsets.
func (f *Folder) Commit(ctx context.Context, records int) error {
	ctx, span := f.tracer.Start(ctx, "projector.commit", trace.WithLinks(f.links...),
		trace.WithAttributes(attribute.Int("argosy.records", records)))
	defer span.End()
	f.links = nil
	b := f.view.Flush()
	b.From = map[Partition]int64{}
	for p := range b.Offsets {
		if at, ok := f.expect[p]; ok {
			b.From[p] = at
		}
	}
	if err := f.store.Commit(ctx, b); err != nil {
		f.view.Forget()
		span.RecordError(err)
		span.SetStatus(codes.Error, "store commit failed")
		return fmt.Errorf("commit: %w", err)
	}
	for p, at := range b.Offsets {
		f.expect[p] = at
	}
	return nil
}

// Expect tells the Folder the stored offset partition p's next step
// begins at (0 when none is stored): the offset it started reading p
// from. From then on each Commit is a compare-and-set on p's stored
// offset, which fails if another writer moved it, and moves the
// expectation to the offset it stored. A Folder that was never told about
// p commits it as the store's fence alone allows (never back), which
// suits a rebuild into a store nothing else writes.
func (f *Folder) Expect(p Partition, stored int64) { f.expect[p] = stored }

// Unexpect forgets what Expect said about ps: they are not this writer's
// any more.
func (f *Folder) Unexpect(ps ...Partition) {
	for _, p := range ps {
		delete(f.expect, p)
	}
}

// Forget drops the working set; rows are read from the store again when a
// step needs them. Call it after Commit, when another writer may have
// changed rows it holds, or to drop a step that will not be committed.
func (f *Folder) Forget() {
	f.view.Forget()
	f.links = nil
}

// load reads into the working set the rows that folding decoded needs and
// it does not hold.
func (f *Folder) load(ctx context.Context, decoded []*events.Decoded) error {
	need := &Need{}
	for _, d := range decoded {
		n := Needs(d)
		need.Registrations = append(need.Registrations, n.Registrations...)
		need.Desired = append(need.Desired, n.Desired...)
		need.Observed = append(need.Observed, n.Observed...)
		need.Objects = append(need.Objects, n.Objects...)
		need.Operations = append(need.Operations, n.Operations...)
		need.ChainHeads = append(need.ChainHeads, n.ChainHeads...)
	}
	missing := f.view.Missing(need)
	if missing.empty() {
		return nil
	}
	rows, err := f.store.Load(ctx, missing)
	if err != nil {
		return fmt.Errorf("load rows: %w", err)
	}
	f.view.Merge(missing, rows)
	return nil
}

func (n *Need) empty() bool {
	return len(n.Registrations)+len(n.Beats)+len(n.Desired)+len(n.Observed)+len(n.Objects)+len(n.Operations)+
		len(n.ChainHeads) == 0
}
