package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
)

// change is one event a call makes on one cluster.
type change struct {
	cluster string
	// key is the desired-state key of the object (the cluster's name for
	// a registration).
	key  string
	kind string
	// build makes the event from the object's latest entry (exists is
	// false for an object never written). It runs under the partition's
	// lock, on a ledger read to the partition's end; an error, such as a
	// conflict, writes nothing of the partition.
	build func(ctx context.Context, cur entry, exists bool) (*pending, error)
}

// checked builds the change's event and checks that the log would take
// it (checkEvent), so that an event the caller's input makes too large is
// the caller's error, decided before anything is written.
func (ch change) checked(ctx context.Context, cur entry, exists bool) (*pending, error) {
	p, err := ch.build(ctx, cur, exists)
	if err != nil || p == nil {
		return p, err
	}
	if err := checkEvent(ctx, p.event); err != nil {
		return nil, err
	}
	return p, nil
}

// idNamespace derives the event ids of idempotent writes.
var idNamespace = uuid.MustParse("6f6d8b8e-5a4e-4c2b-9a7e-61726773792e")

// eventID returns the id of the event a change makes: derived from the
// idempotency key, the actor, the action and the object when the call has
// a key, so that a retry names the same event; random otherwise.
func eventID(c *call, ch change) string {
	k := c.idempotencyKey
	if k == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(idNamespace, []byte(strings.Join([]string{c.p.Actor, k, c.action, ch.key}, "\x00"))).String()
}

// commit writes the changes, each partition's in one transaction with the
// call's audit record, and answers once all are durable. A dry run builds
// them against the ledger as it stands and writes nothing.
func (s *Server) commit(ctx context.Context, c *call, changes []change) (*api.Result, error) {
	res := &api.Result{Events: []api.Written{}}
	if err := s.signingErr(); err != nil {
		return nil, err
	}
	if c.dryRun {
		res.DryRun = true
		ids := make([]string, len(changes))
		for i, ch := range changes {
			ids[i] = eventID(c, ch)
		}
		if err := s.sameRequest(c, ids); err != nil {
			return nil, err
		}
		for _, ch := range changes {
			cur, ok := s.ledger.get(ch.key)
			p, err := ch.checked(ctx, cur, ok)
			if err != nil {
				return nil, err
			}
			if p != nil {
				res.Events = append(res.Events, describe(p, nil))
			}
		}
		return res, nil
	}
	byPartition := map[int32][]change{}
	for _, ch := range changes {
		p := s.partitionOf(ch.cluster)
		byPartition[p] = append(byPartition[p], ch)
	}
	// The call's audit record goes into each partition's transaction;
	// only when every one committed is the call's outcome recorded.
	// Otherwise finish records it: a conflict, a refusal decided under
	// the lock, a failure after some partitions were written.
	c.audited = false
	replayed, wrote := 0, false
	for _, p := range slices.Sorted(maps.Keys(byPartition)) {
		n, w, err := s.commitPartition(ctx, c, p, byPartition[p], res)
		if err != nil {
			return nil, partial(err, res)
		}
		replayed += n
		wrote = wrote || w
	}
	c.audited = wrote
	if replayed == len(changes) && len(changes) > 0 {
		res.Replayed = true
	}
	return res, nil
}

// commitPartition writes one partition's changes, with the call's audit
// record; it returns how many were already written under the call's
// idempotency key, and whether it wrote anything.
func (s *Server) commitPartition(ctx context.Context, c *call, p int32, chs []change, res *api.Result) (int, bool, error) {
	var replayed []api.Written
	// Each change's event id is fixed for the whole call: when a commit's
	// outcome is unknown, the next attempt finds the events in the log if
	// they were committed, and answers with them rather than deciding anew.
	ids := make([]string, len(chs))
	for i, ch := range chs {
		ids[i] = eventID(c, ch)
	}
	decide := func(ctx context.Context) ([]pending, error) {
		replayed = replayed[:0]
		// Decided on the ledger read to the partition's end: a key used
		// for another request writes nothing here, whichever replica
		// wrote the first.
		if err := s.sameRequest(c, ids); err != nil {
			return nil, err
		}
		var out []pending
		for i, ch := range chs {
			id := ids[i]
			if w, ok := s.ledger.lookupID(id); ok {
				replayed = append(replayed, w.describe(id))
				continue
			}
			cur, ok := s.ledger.get(ch.key)
			pd, err := ch.checked(ctx, cur, ok)
			if err != nil {
				return nil, err
			}
			if pd == nil {
				continue
			}
			pd.event.SetID(id)
			bindKey(c, pd.event)
			if pd.entry != nil {
				pd.entry.id = id
			}
			out = append(out, *pd)
		}
		return out, nil
	}
	audit := func(ps []pending) ([]*event.Event, error) {
		ids := make([]string, 0, len(ps))
		for _, p := range ps {
			ids = append(ids, p.event.ID())
		}
		cc := *c
		cc.events = ids
		e, err := s.auditEvent(&cc, http.StatusOK)
		return []*event.Event{e}, err
	}
	ps, recs, err := s.writer.write(ctx, configLane(p), decide, audit)
	if err != nil {
		return 0, false, err
	}
	for i, pd := range ps {
		w := describe(&pd, recs[i])
		res.Events = append(res.Events, w)
		c.events = append(c.events, w.ID)
	}
	for _, w := range replayed {
		res.Events = append(res.Events, w)
		c.events = append(c.events, w.ID)
	}
	s.inst.written(ctx, len(ps))
	return len(replayed), len(ps) > 0, nil
}

// describe lists a pending event as the answer does.
func describe(p *pending, rec *kgo.Record) api.Written {
	subj, _ := events.ParseSubject(p.event.Subject())
	w := api.Written{ID: p.event.ID(), Type: p.event.Type(), Cluster: subj.Cluster, Kind: subj.Kind,
		Namespace: subj.Namespace, Name: subj.Name, Generation: p.generation}
	if subj.Kind == "" {
		w.Kind, w.Name = api.KindClusters, subj.Cluster
	}
	if rec != nil {
		off := rec.Offset
		w.Partition, w.Offset = rec.Partition, &off
	}
	return w
}

// describe lists an event the ledger saw as the answer does.
func (w written) describe(id string) api.Written {
	off := w.offset
	out := api.Written{ID: id, Type: w.typ, Generation: w.generation, Partition: w.partition, Offset: &off}
	if parts := strings.SplitN(w.key, "/", 4); len(parts) == 4 {
		out.Cluster, out.Kind, out.Namespace, out.Name = parts[0], parts[1], parts[2], parts[3]
	} else {
		out.Cluster, out.Kind, out.Name = w.key, api.KindClusters, w.key
	}
	return out
}

// partial adds to a failed call's error what it wrote before failing.
func partial(err error, res *api.Result) error {
	if len(res.Events) == 0 {
		return err
	}
	ids := make([]string, 0, len(res.Events))
	for _, w := range res.Events {
		ids = append(ids, w.ID)
	}
	// A refusal (a conflict, a denial, an invalid request) stays what it
	// is: retrying would meet it again.
	var ae *apiError
	if errors.As(err, &ae) && ae.status >= 400 && ae.status < 500 {
		body := ae.body
		body.Error = fmt.Sprintf("%s; %d events were written before it (%s)", body.Error, len(ids), strings.Join(ids, ", "))
		return &apiError{status: ae.status, body: body}
	}
	if errors.Is(err, auth.ErrDenied) {
		return failf(http.StatusForbidden, "%v; %d events were written before it (%s)", err, len(ids), strings.Join(ids, ", "))
	}
	return failf(http.StatusServiceUnavailable, "%v; %d events were written before the failure (%s): retry with the same %s to write the rest",
		err, len(ids), strings.Join(ids, ", "), api.HeaderIdempotencyKey)
}

// partitionOf returns the config partition of a cluster: its pin, if its
// registration has one the topic can hold, else the partitioner's choice.
func (s *Server) partitionOf(cluster string) int32 {
	pins := map[string]int32{}
	if e, ok := s.ledger.get(cluster); ok && e.pin != nil {
		pins[cluster] = *e.pin
	}
	return events.NewPartitioner(pins).PartitionOf(cluster, s.partitions)
}

// generationFor checks an expected generation against an object's entry
// and returns the next generation. An object never written, or deleted,
// is at generation 0 for the check.
func generationFor(expected *int64, cur entry, exists bool, what string) (int64, error) {
	at := int64(0)
	if exists && !cur.deleted {
		at = cur.generation
	}
	if expected != nil && *expected != at {
		g := at
		msg := fmt.Sprintf("%s is at generation %d, not %d: it changed since you read it", what, at, *expected)
		if *expected == 0 {
			msg = fmt.Sprintf("%s already exists (generation %d)", what, at)
		}
		return 0, &apiError{status: http.StatusConflict, body: api.Error{Error: msg, Generation: &g,
			Hint: "read its generation again (argosy app list, argosy cluster list), then retry"}}
	}
	if exists {
		return cur.generation + 1, nil
	}
	return 1, nil
}

// newEvent builds a hub event about a cluster's object.
func newEvent(typ string, subj events.Subject, data any) (*event.Event, error) {
	return events.New(Source, typ, subj.String(), subj.Cluster, data)
}

// allowChange checks, as a change is decided on the ledger read to its
// partition's end, that p may make it on the object as it is: on its
// cluster with the labels it has now, and, when the object exists, in the
// project it is in now. A token limited to a project may not take over
// another project's object by naming its own project, nor act on a
// cluster relabelled since the call was first checked.
func (s *Server) allowChange(p *auth.Principal, action, cluster string, cur entry, exists bool) error {
	cl, ok := s.ledger.get(cluster)
	if p.Clusters != "" && (!ok || cl.deleted || cl.typ != events.TypeClusterRegistered) {
		return fmt.Errorf("%w: %s may not %s on cluster %q: it is not registered, so it has no labels to match %q", auth.ErrDenied, p.Actor, action, cluster, p.Clusters)
	}
	if !exists || cur.deleted {
		return p.Allow(action, cluster, cl.labels, "")
	}
	return p.AllowShared(action, cluster, cl.labels, cur.project)
}

// allowProjectChange is allowChange for an AppProject, whose project is
// its name.
func (s *Server) allowProjectChange(p *auth.Principal, action, cluster, project string) error {
	cl, _ := s.ledger.get(cluster)
	return p.Allow(action, cluster, cl.labels, project)
}

// eventHeadroom is what an event grows by after the hub decides it: its
// signature, its trace context and, on the desired-state topic's copy, the
// config offset. A change whose event would not fit with it is refused
// before anything is written.
const eventHeadroom = 2 << 10

// checkEvent refuses an event the caller's input makes unfit for the log,
// as publishing it would, but as the caller's error and before anything is
// written: 413 for an event over events.MaxEventBytes, 400 for one its
// schema refuses.
func checkEvent(ctx context.Context, e *event.Event) error {
	if err := events.ValidateData(e.Type(), e.Data()); err != nil {
		return eventError(fmt.Errorf("%s: %w", e.Type(), err))
	}
	r, err := events.EventRecord(ctx, e)
	if err != nil {
		return fmt.Errorf("event %s: %w", e.Type(), err)
	}
	if n := events.RecordSize(r) + eventHeadroom; n > events.MaxEventBytes {
		return tooLarge(fmt.Sprintf("the event this request makes (%s) would be %d bytes with the %d KiB the hub adds as it signs it: "+
			"over the limit of %d bytes (%d KiB) on one event", e.Type(), n, eventHeadroom>>10, events.MaxEventBytes, events.MaxEventBytes>>10))
	}
	return nil
}

func tooLarge(msg string) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, body: api.Error{Error: msg,
		Hint: "make the manifest smaller: large Helm values belong in a values file in the repository, large data not in annotations"}}
}

// eventError is the answer to a write whose event the log would refuse
// (events.ErrOversized, events.ErrSchema): the request's input made it,
// so it is the caller's to change, not a 500. Any other error is nil.
func eventError(err error) *apiError {
	switch {
	case errors.Is(err, events.ErrOversized):
		return tooLarge(fmt.Sprintf("the event this request makes is over the limit of %d bytes (%d KiB) on one event: %v",
			events.MaxEventBytes, events.MaxEventBytes>>10, err))
	case errors.Is(err, events.ErrSchema):
		return &apiError{status: http.StatusBadRequest, body: api.Error{
			Error: fmt.Sprintf("the event this request makes does not fit its schema: %v", err),
			Hint:  "the schema names the field; the hub's own checks should have caught it, so please report it too"}}
	}
	return nil
}
