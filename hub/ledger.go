package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// entry is what the ledger knows of one object or cluster: its latest
// config event.
type entry struct {
	id         string
	typ        string
	generation int64
	deleted    bool
	partition  int32
	offset     int64 // of the config record
	project    string
	labels     map[string]string
	// spec is kept for AppProjects only: applications are checked
	// against it.
	spec json.RawMessage
	// signingKey and sealingKey are a cluster's key ids, pin its pinned
	// partition.
	signingKey, sealingKey string
	pin                    *int32
	// join is a cluster's unused join token.
	join *schemas.JoinToken
	// url is a repository's.
	url string
}

// written is a config event the ledger has seen within the idempotency
// window, by id: a retried request finds what it wrote here.
type written struct {
	key        string
	typ        string
	generation int64
	partition  int32
	offset     int64
	at         time.Time
	// digest is the request digest the event carries, if it was written
	// under an idempotency key (idempotency.go).
	digest string
}

// ledger is the hub's index of the log: the latest config event of every
// object and cluster (from the compacted desired-state topic, read from
// its start), the ids of the config events appended within the
// idempotency window (from the config topic, read from the window's
// start), and the dashboard sessions ended within sessionEndsKept (from
// the audit topic, read from that far back; sessions.go).
// It holds no state of its own: every replica builds the same one from the
// log, and a write decides against it only once it has read its partition
// to the end (see owner.sync).
type ledger struct {
	topics events.Topics
	window time.Duration
	log    *slog.Logger
	in     *events.Intake
	// lag delays each record the follower takes: tests use it to hold a
	// replica's ledger behind the log.
	lag time.Duration
	// sessions is told the ends of sessions; nil: they are not read.
	sessions *sessions

	mu         sync.Mutex
	objects    map[string]*entry     // by desired-state key
	placements map[string]*placement // by "namespace/name"
	ids        map[string]written
	// requests are the idempotency keys used within the window, by
	// reference (idempotency.go).
	requests map[string]keyUse
	// pruned is when ids and requests were last pruned.
	pruned time.Time
	// next is the next offset to read of each partition, by topic name;
	// moved tells waiters that it moved.
	next  map[string]map[int32]int64
	moved chan struct{}
}

func newLedger(topics events.Topics, in *events.Intake, window time.Duration, log *slog.Logger) *ledger {
	return &ledger{topics: topics, in: in, window: window, log: log, objects: map[string]*entry{}, placements: map[string]*placement{},
		ids: map[string]written{}, requests: map[string]keyUse{}, next: map[string]map[int32]int64{}, moved: make(chan struct{})}
}

// plan returns the ranges the ledger reads before the hub is ready: the
// desired-state and placements topics from their start, the config topic
// from the window's start and the audit topic from sessionEndsKept back,
// each to its last stable offset (a transaction still open may yet
// commit).
func (l *ledger) plan(ctx context.Context, adm *kadm.Client, now time.Time) ([]events.Range, error) {
	var all []events.Range
	for _, p := range []struct {
		topics []string
		from   time.Time
	}{
		{[]string{l.topics[events.TopicConfig]}, now.Add(-l.window)},
		{[]string{l.topics[events.TopicDesired], l.topics[events.TopicPlacements]}, time.Time{}},
		{[]string{l.topics[events.TopicAudit]}, now.Add(-sessionEndsKept)},
	} {
		ranges, err := events.PlanRanges(ctx, adm, p.topics, events.Bounds{From: p.from})
		if err != nil {
			return nil, fmt.Errorf("hub: where to start reading: %w", err)
		}
		all = append(all, ranges...)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range all {
		l.advance(r.Topic, r.Partition, r.From)
	}
	return all, nil
}

// follow reads ranges into the ledger with the client (made with
// events.RangeConsumeOpts), closes caughtUp once they are read, and then
// reads on from their ends until ctx ends.
func (l *ledger) follow(ctx context.Context, cl *kgo.Client, ranges []events.Range, caughtUp chan<- struct{}) error {
	reader, err := events.NewRangeReader(cl, ranges, events.WithLogger(l.log))
	if err != nil {
		return err
	}
	for {
		batch, err := reader.Poll(ctx, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if ctx.Err() != nil {
			return nil //nolint:nilerr // a stop, not a failure
		}
		if err != nil {
			l.log.WarnContext(ctx, "reading the log; retrying", "err", fmt.Errorf("hub: %w", err))
			continue
		}
		if err := l.takeAll(ctx, batch); err != nil {
			return err
		}
	}
	from, read := map[string]map[int32]kgo.Offset{}, map[string][]int32{}
	l.mu.Lock()
	for _, r := range ranges {
		l.advance(r.Topic, r.Partition, r.To)
		if from[r.Topic] == nil {
			from[r.Topic] = map[int32]kgo.Offset{}
		}
		from[r.Topic][r.Partition], read[r.Topic] = kgo.NewOffset().At(r.To), append(read[r.Topic], r.Partition)
	}
	l.mu.Unlock()
	close(caughtUp)
	cl.RemoveConsumePartitions(read)
	cl.ResumeFetchPartitions(read)
	cl.AddConsumePartitions(from)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // a stop, not a failure
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("hub: reading %s/%d: %w", t, p, err))
		})
		if err := errors.Join(errs...); err != nil {
			l.log.WarnContext(ctx, "reading the log; retrying", "err", err)
		}
		if err := l.takeAll(ctx, fs.Records()); err != nil {
			return err
		}
	}
}

// takeAll takes a poll's records, and forgets what fell out of the window.
// A stop is no error.
func (l *ledger) takeAll(ctx context.Context, batch []*kgo.Record) error {
	for _, r := range batch {
		if err := l.take(ctx, r); err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // a stop, not a failure
			}
			return err
		}
	}
	l.prune(time.Now())
	return nil
}

// take folds one record into the ledger and moves its partition's offset.
func (l *ledger) take(ctx context.Context, r *kgo.Record) error {
	if r.Topic == l.topics[events.TopicAudit] && !mayEndSession(r) {
		// Most audit records are not a session's end: they are passed
		// over undecoded.
		l.mu.Lock()
		defer l.mu.Unlock()
		l.advance(r.Topic, r.Partition, r.Offset+1)
		return nil
	}
	if l.lag > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.lag):
		}
	}
	d, err := l.in.Take(ctx, r)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		// Spokes and projectors judge the record for themselves; the
		// ledger only leaves it out.
		l.log.WarnContext(ctx, "hub: a record of the log does not decode; left out of the ledger",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", events.Reason(err), "err", err)
	case d != nil:
		l.fold(d, r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(r.Topic, r.Partition, r.Offset+1)
	return nil
}

// advance moves a partition's next offset forward and wakes the waiters.
// l.mu is held.
func (l *ledger) advance(topic string, p int32, next int64) {
	m := l.next[topic]
	if m == nil {
		m = map[int32]int64{}
		l.next[topic] = m
	}
	if next > m[p] {
		m[p] = next
		close(l.moved)
		l.moved = make(chan struct{})
	}
}

// fold records a decoded event: a desired-state copy updates its object,
// a config event its id, a session's end its session.
func (l *ledger) fold(d *events.Decoded, r *kgo.Record) {
	if r.Topic == l.topics[events.TopicAudit] {
		a, ok := d.Data.(*schemas.AuditRecorded)
		ref, isSession := "", false
		if ok {
			ref, isSession = strings.CutPrefix(a.Target, sessionTarget)
		}
		if isSession && a.Action == actionEndSession && a.Outcome == "allowed" && l.sessions != nil {
			l.sessions.end(ref, r.Timestamp)
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r.Topic {
	case l.topics[events.TopicDesired]:
		off, err := events.ConfigOffset(r)
		if err != nil {
			return
		}
		l.put(string(r.Key), entryOf(d, off))
	case l.topics[events.TopicPlacements]:
		l.noteRequest(d.Event, r.Timestamp)
		if pl := placementOf(d); pl != nil {
			l.putPlacement(pl)
		}
	case l.topics[events.TopicConfig]:
		res := resourceOf(d.Data)
		l.ids[d.Event.ID()] = written{key: events.DesiredKey(d.Subject), typ: d.Spec.Type, generation: res.Generation,
			partition: r.Partition, offset: r.Offset, at: r.Timestamp, digest: l.noteRequest(d.Event, r.Timestamp)}
	}
}

// mayEndSession tells, without decoding it, whether an audit record may
// be a session's end: its data names the action. A false positive costs
// only its decoding; fold decides.
func mayEndSession(r *kgo.Record) bool {
	return bytes.Contains(r.Value, []byte(`"`+actionEndSession+`"`))
}

// put replaces the entry of key if e is newer. A delete keeps the
// object's project: its event names none. l.mu is held.
func (l *ledger) put(key string, e *entry) {
	old, ok := l.objects[key]
	if ok && old.generation > e.generation {
		return
	}
	if ok && e.deleted && e.project == "" {
		e.project = old.project
	}
	l.objects[key] = e
}

// pruneEvery is the least time between two walks over the ledger's ids
// and keys that forget those past the window.
const pruneEvery = 10 * time.Second

// prune forgets the ids and keys past the window at now, unless it did
// less than pruneEvery before.
func (l *ledger) prune(now time.Time) {
	l.mu.Lock()
	due := now.Sub(l.pruned) >= pruneEvery || now.Before(l.pruned)
	if due {
		l.pruned = now
	}
	l.mu.Unlock()
	if due {
		l.pruneIDs(now)
	}
}

func (l *ledger) pruneIDs(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, w := range l.ids {
		if l.pastAt(w.at, now) {
			delete(l.ids, id)
		}
	}
	for ref, u := range l.requests {
		if l.pastAt(u.at, now) {
			delete(l.requests, ref)
		}
	}
}

// recorded folds events this replica has just committed, so that its next
// decision sees them before the follower reads them back.
func (l *ledger) recorded(es []pending, recs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, p := range es {
		rec := recs[i]
		digest := l.noteRequest(p.event, rec.Timestamp)
		if p.placement != nil {
			pl := *p.placement
			pl.id, pl.offset = p.event.ID(), rec.Offset
			l.putPlacement(&pl)
			continue
		}
		l.ids[p.event.ID()] = written{key: p.key, typ: p.event.Type(), generation: p.generation,
			partition: rec.Partition, offset: rec.Offset, at: rec.Timestamp, digest: digest}
		if p.entry == nil {
			continue
		}
		e := *p.entry
		e.id, e.partition, e.offset = p.event.ID(), rec.Partition, rec.Offset
		l.put(p.key, &e)
	}
}

// list returns the latest word on every object and cluster, filtered by
// cluster and kind ("" for any), in key order.
func (l *ledger) list(cluster, kind string) []api.Object {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []api.Object
	for _, key := range slices.Sorted(maps.Keys(l.objects)) {
		e := l.objects[key]
		o := api.Object{Kind: api.KindClusters, Generation: e.generation, Deleted: e.deleted, Project: e.project,
			Labels: e.labels, URL: e.url, Pin: e.pin, EventID: e.id, Partition: e.partition, Offset: e.offset}
		if parts := strings.SplitN(key, "/", 4); len(parts) == 4 {
			o.Cluster, o.Kind, o.Namespace, o.Name = parts[0], parts[1], parts[2], parts[3]
		} else {
			o.Cluster, o.Name = key, key
		}
		if (cluster == "" || o.Cluster == cluster) && (kind == "" || o.Kind == kind) {
			out = append(out, o)
		}
	}
	return out
}

// get returns a copy of the entry of key.
func (l *ledger) get(key string) (entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.objects[key]
	if !ok {
		return entry{}, false
	}
	return *e, true
}

// lookupID returns what the config event id wrote, if the ledger saw it.
func (l *ledger) lookupID(id string) (written, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.ids[id]
	if ok && l.past(w.at) {
		return written{}, false // not pruned yet
	}
	return w, ok
}

// past says whether at is past the window now. l.mu is held.
func (l *ledger) past(at time.Time) bool { return l.pastAt(at, time.Now()) }

// pastAt says whether at is past the window at now: the one rule both
// pruneIDs and the lookups judge by.
func (l *ledger) pastAt(at, now time.Time) bool { return now.Sub(at) > l.window }

// clusters returns the registered clusters (not deregistered), by name.
func (l *ledger) clusters() map[string]entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]entry{}
	for k, e := range l.objects {
		if e.typ == events.TypeClusterRegistered {
			out[k] = *e
		}
	}
	return out
}

// movedChan returns a channel closed the next time the ledger reads on.
func (l *ledger) movedChan() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moved
}

// wait returns once the ledger has read every partition in ends up to its
// offset there.
func (l *ledger) wait(ctx context.Context, ends map[string]map[int32]int64) error {
	for {
		l.mu.Lock()
		behind := false
		for t, ps := range ends {
			for p, end := range ps {
				if l.next[t][p] < end {
					behind = true
				}
			}
		}
		moved := l.moved
		l.mu.Unlock()
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// entryOf returns the entry a desired-state event makes.
func entryOf(d *events.Decoded, offset int64) *entry {
	res := resourceOf(d.Data)
	e := &entry{id: d.Event.ID(), typ: d.Spec.Type, generation: res.Generation, partition: d.Partition, offset: offset}
	switch p := d.Data.(type) {
	case *schemas.ApplicationUpserted:
		e.project, e.labels = p.Project, p.Labels
	case *schemas.AppProjectUpserted:
		e.labels, e.spec = p.Labels, slices.Clone(p.Spec)
	case *schemas.ClusterRegistered:
		e.labels, e.signingKey, e.sealingKey, e.pin, e.join = p.Labels, p.SigningKeyID, p.SealingKeyID, p.Partition, p.JoinToken
	case *schemas.RepositoryUpserted:
		e.project, e.url = p.Project, p.URL
	case *schemas.ApplicationDeleted, *schemas.AppProjectDeleted, *schemas.RepositoryDeleted, *schemas.ClusterDeregistered:
		e.deleted = true
	}
	return e
}

// resourceOf returns the Resource a config payload embeds (the zero one
// for a payload that embeds none).
func resourceOf(data any) schemas.Resource {
	if o, ok := data.(interface{ Object() schemas.Resource }); ok {
		return o.Object()
	}
	return schemas.Resource{}
}
