package spoke

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// AppStatus is what the agent reports of one local Application
// (internal/argocd reads it from the Application).
type AppStatus = argocd.AppStatus

// StatusSource watches the local Applications and calls changed with the
// status of each one that was added, changed or deleted, until ctx ends.
// Once the Applications that existed at the start have all been delivered,
// it calls changed with ListDone set. internal/argocd's Watcher is the real
// one; Run returns once every goroutine it started has stopped.
type StatusSource interface {
	Run(ctx context.Context, changed func(AppStatus)) error
}

// Tee returns a StatusSource that runs src and passes every status to each
// of also before the caller's own callback, so that several consumers share
// one watch.
func Tee(src StatusSource, also ...func(AppStatus)) StatusSource {
	return teeSource{src: src, also: also}
}

type teeSource struct {
	src  StatusSource
	also []func(AppStatus)
}

func (t teeSource) Run(ctx context.Context, changed func(AppStatus)) error {
	return t.src.Run(ctx, func(s AppStatus) {
		for _, f := range t.also {
			f(s)
		}
		changed(s)
	})
}

// Reporter publishes compact status deltas of the local Applications: only
// the fields that changed since the last delta of the same Application, and
// the whole status the first time and again every resync interval, so that
// the status topic, which keeps 7 days, always holds each Application's
// whole current status for a projector rebuilt from it. Changes within the
// window are coalesced into one delta. While Kafka is unreachable the latest status of each
// Application waits (so the buffer is bounded by the number of
// Applications) and is published when Kafka is back.
type Reporter struct {
	cluster string
	publish Publisher
	window  time.Duration // coalesces changes
	resync  time.Duration // between whole statuses of one Application
	log     *slog.Logger

	mu      sync.Mutex
	pending map[appKey]AppStatus
	sent    map[appKey]sentStatus
}

type appKey struct{ namespace, name string }

type sentStatus struct {
	status AppStatus
	seq    int64
	// nextFull is when the whole status is due again.
	nextFull time.Time
}

// pendingEvent is a delta on its way to Kafka.
type pendingEvent struct {
	key    appKey
	status AppStatus
	seq    int64
	full   bool
	// data is the delta's JSON, encoded once: it sizes the batches and is
	// the event's data or one of its batch's deltas.
	data json.RawMessage
}

// batchData is an applications.changed event's data with its deltas
// encoded already: the same JSON as schemas.ApplicationStatusBatch's.
type batchData struct {
	Cluster string            `json:"cluster"`
	Deltas  []json.RawMessage `json:"deltas"`
}

// batchBytes bounds the data of one batch of deltas, well inside
// events.MaxEventBytes with the headers.
const batchBytes = 128 << 10

// newReporter returns the status reporter of cluster, which publishes
// through pub. It takes the WithWindow, WithStatusResync and WithLogger
// options.
func newReporter(cluster string, pub Publisher, opts ...Option) (*Reporter, error) {
	if cluster == "" || pub == nil {
		return nil, errors.New("reporter: a cluster and a publisher are required")
	}
	o := newOptions(opts)
	if o.window <= 0 || o.statusResync <= 0 {
		return nil, errors.New("reporter: the window and the resync interval must be positive")
	}
	return &Reporter{cluster: cluster, publish: pub, window: o.window, resync: o.statusResync, log: o.Log,
		pending: map[appKey]AppStatus{}, sent: map[appKey]sentStatus{}}, nil
}

// Run reports the statuses src delivers until ctx ends, and returns once
// src has stopped.
func (r *Reporter) Run(ctx context.Context, src StatusSource) error {
	window := r.window
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return src.Run(gctx, r.observe) })
	g.Go(func() error {
		t := time.NewTicker(window)
		defer t.Stop()
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-t.C:
				r.flush(gctx)
			}
		}
	})
	return g.Wait()
}

func (r *Reporter) observe(s AppStatus) {
	if s.ListDone {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[appKey{s.Namespace, s.Name}] = s
}

// flush publishes a delta for every Application whose status changed, and
// the whole status of every one whose resync is due.
func (r *Reporter) flush(ctx context.Context) {
	now := time.Now()
	r.mu.Lock()
	batch := r.pending
	r.pending = map[appKey]AppStatus{}
	sent := make(map[appKey]sentStatus, len(batch))
	for k, v := range r.sent {
		_, changed := batch[k]
		due := !now.Before(v.nextFull)
		if changed || due {
			sent[k] = v
		}
		if due && !changed {
			batch[k] = v.status // its whole status again
		}
	}
	r.mu.Unlock()

	es, evs := r.events(ctx, r.deltas(ctx, batch, sent, now))
	if len(evs) == 0 {
		return
	}
	_, err := r.publish.Publish(ctx, es...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		switch {
		case err != nil:
			// Keep it for the next flush unless a newer status arrived.
			if _, newer := r.pending[e.key]; !newer {
				r.pending[e.key] = e.status
			}
		case e.status.Deleted:
			delete(r.sent, e.key) // gone: nothing to resend
		default:
			next := r.sent[e.key].nextFull
			if e.full {
				// Spread the resyncs of Applications seen together over
				// a tenth of the interval.
				next = now.Add(r.resync - rand.N(r.resync/10+1))
			}
			r.sent[e.key] = sentStatus{status: e.status, seq: e.seq, nextFull: next}
		}
	}
	if err != nil {
		r.logErr(ctx, "publish status; will retry", err)
	}
}

// deltas returns the deltas of batch: each from what was sent of it, or
// its whole status when it was never sent or its resync is due.
func (r *Reporter) deltas(ctx context.Context, batch map[appKey]AppStatus, sent map[appKey]sentStatus, now time.Time) []*pendingEvent {
	var evs []*pendingEvent
	for k, s := range batch {
		prev, seen := sent[k]
		full := !seen || !now.Before(prev.nextFull)
		delta, changed := Delta(prev.status, s, full)
		if !changed {
			continue
		}
		delta.Resource = schemas.Resource{Cluster: r.cluster, Namespace: s.Namespace, Name: s.Name, Generation: s.Generation}
		delta.Seq = prev.seq + 1
		data, err := json.Marshal(delta)
		if err != nil {
			r.logErr(ctx, "status event", err)
			continue
		}
		evs = append(evs, &pendingEvent{key: k, status: s, seq: delta.Seq, full: full, data: data})
	}
	return evs
}

// events returns the events that carry pes, and the deltas they carry: a
// lone delta in an application.changed event of its own, several in
// applications.changed batches of at most schemas.MaxBatchDeltas and about
// batchBytes of data each, one signature for the batch. A delta that cannot
// be encoded is logged and left out.
func (r *Reporter) events(ctx context.Context, pes []*pendingEvent) ([]*event.Event, []*pendingEvent) {
	var es []*event.Event
	var carried []*pendingEvent
	for len(pes) > 0 {
		n, size := 1, len(pes[0].data)
		for n < len(pes) && n < schemas.MaxBatchDeltas && size+len(pes[n].data) <= batchBytes {
			size += len(pes[n].data)
			n++
		}
		chunk := pes[:n]
		pes = pes[n:]
		e, err := r.event(chunk)
		if err != nil {
			r.logErr(ctx, "status event", err)
			continue
		}
		es, carried = append(es, e), append(carried, chunk...)
	}
	return es, carried
}

// event returns the event of one delta, or of a batch of several.
func (r *Reporter) event(chunk []*pendingEvent) (*event.Event, error) {
	if len(chunk) == 1 {
		k := chunk[0].key
		return events.New(Source(r.cluster), events.TypeApplicationStatus,
			events.Subject{Cluster: r.cluster, Kind: schemas.SubjectApplications, Namespace: k.namespace, Name: k.name}.String(), r.cluster, chunk[0].data)
	}
	b := batchData{Cluster: r.cluster, Deltas: make([]json.RawMessage, len(chunk))}
	for i, pe := range chunk {
		b.Deltas[i] = pe.data
	}
	return events.New(Source(r.cluster), events.TypeApplicationStatusBatch, events.Subject{Cluster: r.cluster}.String(), r.cluster, b)
}

func (r *Reporter) logErr(ctx context.Context, msg string, err error) {
	r.log.WarnContext(ctx, msg, "err", err)
}

// Delta returns the status event fields that changed from prev to cur, all
// of them when full. changed is false when nothing did.
func Delta(prev, cur AppStatus, full bool) (d schemas.ApplicationStatusChanged, changed bool) {
	if cur.Deleted {
		return schemas.ApplicationStatusChanged{Deleted: true}, !prev.Deleted || full
	}
	d.Full = full
	diff := func(a, b any) bool { return full || !reflect.DeepEqual(a, b) }
	if diff(prev.Sync, cur.Sync) {
		d.Sync, changed = cur.Sync, true
	}
	if diff(prev.Health, cur.Health) {
		d.Health, changed = cur.Health, true
	}
	if diff(prev.Operation, cur.Operation) {
		d.Operation, changed = cur.Operation, true
	}
	if diff(prev.Conditions, cur.Conditions) {
		d.Conditions, changed = cur.Conditions, true
	}
	if diff(prev.Resources, cur.Resources) {
		d.Resources, changed = cur.Resources, true
	}
	if prev.Generation != cur.Generation {
		changed = true
	}
	return d, changed || full
}

// DeltaSize is the size in bytes of a delta's JSON data, for measuring how
// much smaller deltas are than whole Application objects.
func DeltaSize(d schemas.ApplicationStatusChanged) int {
	b, err := json.Marshal(d)
	if err != nil {
		return 0
	}
	return len(b)
}
