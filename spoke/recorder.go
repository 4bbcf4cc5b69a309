package spoke

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// MarkStore keeps DeployMarks, keyed by "namespace/name", where they survive
// a restart of the spoke. SaveMarks returns once the change is durable.
type MarkStore interface {
	Marks(ctx context.Context) (map[string]DeployMark, error)
	SaveMarks(ctx context.Context, set map[string]DeployMark, remove []string) error
}

// Recorder publishes a deployment record for every sync of the local
// Applications, from status.history and the last operation's result, and a
// gap event whenever it cannot prove that it saw them all.
//
// It records what it published in a MarkStore after the events are durable
// in Kafka. A crash in between publishes the same records again on restart,
// with the same deployment ids and event ids, which readers de-duplicate.
// While Kafka is unreachable it keeps only the latest status of each
// Application: the deployments themselves wait in Argo CD's history, which
// holds the last revisionHistoryLimit of them; an outage longer than that
// ends in a gap event, never in silence.
type Recorder struct {
	cluster string
	publish Publisher
	marks   MarkStore
	window  time.Duration // how often pending statuses are recorded
	log     *slog.Logger

	mu       sync.Mutex
	pending  map[string]AppStatus
	present  map[string]bool // Applications seen since the start
	listDone bool            // the initial list is complete; look for deleted ones
	listed   map[string]bool // the present set when the list completed
}

// newRecorder returns the deployment recorder of cluster, which publishes
// through pub and keeps its marks in marks. It takes the WithWindow and
// WithLogger options.
func newRecorder(cluster string, pub Publisher, marks MarkStore, opts ...Option) (*Recorder, error) {
	if cluster == "" || pub == nil || marks == nil {
		return nil, errors.New("recorder: a cluster, a publisher and a mark store are required")
	}
	o := newOptions(opts)
	if o.window <= 0 {
		return nil, errors.New("recorder: the window must be positive")
	}
	return &Recorder{cluster: cluster, publish: pub, marks: marks, window: o.window, log: o.Log,
		pending: map[string]AppStatus{}, present: map[string]bool{}}, nil
}

// Observe takes one status from a StatusSource.
func (r *Recorder) Observe(s AppStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.ListDone {
		r.listDone, r.listed = true, map[string]bool{}
		for k, ok := range r.present {
			r.listed[k] = ok
		}
		return
	}
	k := s.Namespace + "/" + s.Name
	r.pending[k] = s
	r.present[k] = !s.Deleted
}

// Run records pending statuses every window until ctx ends.
func (r *Recorder) Run(ctx context.Context) error {
	var c *markCache // loaded on the first tick
	t := time.NewTicker(r.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.stop(ctx, c)
		case <-t.C:
		}
		if c == nil {
			m, err := r.marks.Marks(ctx)
			if err != nil {
				r.warn(ctx, "read deployment marks; will retry", err)
				continue
			}
			c = &markCache{marks: m, set: map[string]DeployMark{}, remove: map[string]bool{}}
		}
		if err := r.flush(ctx, c); err != nil {
			r.warn(ctx, "record deployments; will retry", err)
		}
	}
}

// stop saves the marks of records already published, so that a graceful
// stop does not publish them again on the next start.
func (r *Recorder) stop(ctx context.Context, c *markCache) error {
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.save(ctx, r.marks); err != nil {
		r.warn(ctx, "deployment marks not saved at stop; their records will be published again", err)
	}
	return nil
}

// markCache is the Run loop's copy of the marks, and the changes not yet
// saved.
type markCache struct {
	marks  map[string]DeployMark
	set    map[string]DeployMark
	remove map[string]bool
}

func (c *markCache) put(k string, m DeployMark) {
	c.marks[k], c.set[k] = m, m
	delete(c.remove, k)
}

func (c *markCache) drop(k string) {
	delete(c.marks, k)
	delete(c.set, k)
	c.remove[k] = true
}

// save writes the changes not saved yet; a failure is retried on the next
// tick without publishing anything again.
func (c *markCache) save(ctx context.Context, store MarkStore) error {
	if len(c.set) == 0 && len(c.remove) == 0 {
		return nil
	}
	remove := slices.Collect(maps.Keys(c.remove))
	if err := store.SaveMarks(ctx, c.set, remove); err != nil {
		return fmt.Errorf("save deployment marks: %w", err)
	}
	c.set, c.remove = map[string]DeployMark{}, map[string]bool{}
	return nil
}

// flush publishes the records of every pending status, then saves the new
// marks. If publishing fails the statuses stay pending, unless newer ones
// arrived.
func (r *Recorder) flush(ctx context.Context, c *markCache) error {
	r.mu.Lock()
	batch, listDone, listed := r.pending, r.listDone, r.listed
	r.pending, r.listDone = map[string]AppStatus{}, false
	r.mu.Unlock()

	var evs eventBatch
	set, remove := map[string]DeployMark{}, []string{}
	for k, s := range batch {
		old, seen := c.marks[k]
		recs, gaps, next := Deployments(r.cluster, s, old, seen)
		for _, g := range gaps {
			evs.add(r.event(events.TypeDeploymentGap, gapID(g), g.Resource, g))
		}
		for _, d := range recs {
			evs.add(r.event(events.TypeDeploymentRecorded, d.DeploymentID, d.Resource, d))
		}
		if s.Deleted {
			remove = append(remove, k)
		} else if !seen || next != old {
			set[k] = next
		}
	}
	if listDone {
		for k, m := range c.marks {
			if _, pending := batch[k]; pending || listed[k] {
				continue
			}
			ns, name, _ := strings.Cut(k, "/")
			g := DeletedGap(r.cluster, ns, name, m)
			evs.add(r.event(events.TypeDeploymentGap, gapID(g), g.Resource, g))
			remove = append(remove, k)
		}
	}
	if err := evs.publish(ctx, r.publish); err != nil {
		r.requeue(batch, listDone)
		return err
	}
	for k, m := range set {
		c.put(k, m)
	}
	for _, k := range remove {
		c.drop(k)
	}
	return c.save(ctx, r.marks)
}

func (r *Recorder) requeue(batch map[string]AppStatus, listDone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range batch {
		if _, newer := r.pending[k]; !newer {
			r.pending[k] = s
		}
	}
	r.listDone = r.listDone || listDone
}

// event builds a deployments-topic event whose id is derived from what it
// records, so that publishing it again yields the same id.
func (r *Recorder) event(typ, id string, res schemas.Resource, data any) (*event.Event, error) {
	e, err := events.New(Source(r.cluster), typ, events.Subject{Cluster: r.cluster, Kind: schemas.SubjectApplications,
		Namespace: res.Namespace, Name: res.Name}.String(), r.cluster, data)
	if err != nil {
		return nil, err
	}
	e.SetID(r.cluster + "/" + res.Namespace + "/" + res.Name + "/" + id)
	return e, nil
}

func gapID(g schemas.DeploymentGap) string {
	to := "unknown"
	if g.ToHistoryID != nil {
		to = strconv.FormatInt(*g.ToHistoryID, 10)
	}
	return g.AppUID + "/gap/" + strconv.FormatInt(g.FromHistoryID, 10) + "-" + to
}

func (r *Recorder) warn(ctx context.Context, msg string, err error) {
	r.log.WarnContext(ctx, msg, "err", err)
}

// eventBatch collects events to publish together, and the first error met
// building them.
type eventBatch struct {
	evs []*event.Event
	err error
}

func (b *eventBatch) add(e *event.Event, err error) {
	if err != nil {
		b.err = errors.Join(b.err, err)
		return
	}
	b.evs = append(b.evs, e)
}

func (b *eventBatch) publish(ctx context.Context, p Publisher) error {
	if b.err != nil {
		return b.err
	}
	if len(b.evs) == 0 {
		return nil
	}
	_, err := p.Publish(ctx, b.evs...)
	return err
}
