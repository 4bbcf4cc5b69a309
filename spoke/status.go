package spoke

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// AppStatus is what the spoke reports of one local Application.
type AppStatus struct {
	Namespace, Name string
	// Generation is the hub's generation the Application was applied at
	// (0 for Applications the hub did not write).
	Generation int64
	Deleted    bool
	Sync       *schemas.SyncStatus
	Health     *schemas.HealthStatus
	Operation  *schemas.OperationState
	Conditions []schemas.Condition
	Resources  *schemas.ResourceSummary

	// For deployment records.
	UID     string
	Project string
	Labels  map[string]string
	History []HistoryEntry
	// LastSync is the result of the last sync or rollback operation.
	LastSync *SyncResult

	// Drift lists the spec fields of an Argosy-managed Application that
	// differ from its desired spec: a local edit.
	Drift []string
	// Local is set for an Application created in the cluster rather than by
	// Argosy, with what autonomous mode publishes of it.
	Local *LocalApp

	// ListDone marks the end of the Applications that existed when the
	// source started: every one of them has been delivered. No other field
	// is set.
	ListDone bool
}

// StatusSource watches the local Applications and calls changed with the
// status of each one that was added, changed or deleted, until ctx ends.
// Once the Applications that existed at the start have all been delivered,
// it calls changed with ListDone set. spoke/kube's Watcher is the real one.
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
// the whole status the first time. Changes within Window are coalesced into
// one delta. While Kafka is unreachable the latest status of each
// Application waits (so the buffer is bounded by the number of
// Applications) and is published when Kafka is back.
type Reporter struct {
	Cluster string
	Source  string
	Publish Publisher
	// Window coalesces changes; zero means one second.
	Window time.Duration
	Log    *slog.Logger

	mu      sync.Mutex
	pending map[appKey]AppStatus
	sent    map[appKey]sentStatus
}

type appKey struct{ namespace, name string }

type sentStatus struct {
	status AppStatus
	seq    int64
}

// pendingEvent is a delta on its way to Kafka.
type pendingEvent struct {
	key    appKey
	status AppStatus
	seq    int64
	ev     *event.Event
}

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context, src StatusSource) error {
	r.mu.Lock()
	r.pending, r.sent = map[appKey]AppStatus{}, map[appKey]sentStatus{}
	r.mu.Unlock()
	window := r.Window
	if window <= 0 {
		window = time.Second
	}
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

// flush publishes a delta for every Application whose status changed.
func (r *Reporter) flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending = map[appKey]AppStatus{}
	sent := make(map[appKey]sentStatus, len(batch))
	for k := range batch {
		if v, ok := r.sent[k]; ok {
			sent[k] = v
		}
	}
	r.mu.Unlock()

	var evs []*pendingEvent
	for k, s := range batch {
		prev, seen := sent[k]
		delta, changed := Delta(prev.status, s, !seen)
		if !changed {
			continue
		}
		delta.Resource = schemas.Resource{Cluster: r.Cluster, Namespace: s.Namespace, Name: s.Name, Generation: s.Generation}
		delta.Seq = prev.seq + 1
		e, err := events.New(r.Source, events.TypeApplicationStatus,
			events.Subject{Cluster: r.Cluster, Kind: "applications", Namespace: s.Namespace, Name: s.Name}.String(), r.Cluster, delta)
		if err != nil {
			r.logErr(ctx, "status event", err)
			continue
		}
		evs = append(evs, &pendingEvent{key: k, status: s, seq: delta.Seq, ev: e})
	}
	if len(evs) == 0 {
		return
	}
	es := make([]*event.Event, len(evs))
	for i, e := range evs {
		es[i] = e.ev
	}
	_, err := r.Publish.Publish(ctx, es...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		if err != nil {
			// Keep it for the next flush unless a newer status arrived.
			if _, newer := r.pending[e.key]; !newer {
				r.pending[e.key] = e.status
			}
			continue
		}
		r.sent[e.key] = sentStatus{status: e.status, seq: e.seq}
	}
	if err != nil {
		r.logErr(ctx, "publish status; will retry", err)
	}
}

func (r *Reporter) logErr(ctx context.Context, msg string, err error) {
	if r.Log != nil {
		r.Log.WarnContext(ctx, msg, "err", err)
	}
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
