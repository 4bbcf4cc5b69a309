package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// ErrNothingKnown is returned by AsOf when the log holds nothing about
// the cluster up to the time asked.
var ErrNothingKnown = errors.New("the log holds nothing about the cluster up to that time")

// DefaultStatusWindow is how far before the time asked AsOf reads a
// cluster's status by default: a spoke sends every Application's whole
// status at least once an hour (spoke.WithStatusResync), so an hour and
// some minutes before any time holds a whole status of every
// Application then known.
const DefaultStatusWindow = 65 * time.Minute

// AsOfQuery asks what held on one cluster at one time.
type AsOfQuery struct {
	Cluster string
	At      time.Time
	// App, if set, limits the answer to Applications of that name.
	App string
	// StatusWindow is how far before At the cluster's status is read
	// (DefaultStatusWindow when zero).
	StatusWindow time.Duration
	// ConfigPartition, if set, is the cluster's config partition, for a
	// cluster pinned to one (ClusterRegistered.partition); by default it is
	// where the partitioner puts the cluster's name.
	ConfigPartition *int32
	// Objects asks for the hub's last event about each of the cluster's
	// objects up to At as well: AsOfResult.Objects.
	Objects bool
}

// AsOfResult is what the log says held on a cluster at a time, and where
// each part of it comes from.
type AsOfResult struct {
	Cluster      string               `json:"cluster"`
	At           time.Time            `json:"at"`
	Registration *ClusterRegistration `json:"registration,omitempty"`
	Heartbeat    *ClusterBeat         `json:"heartbeat,omitempty"`
	Apps         []AsOfApp            `json:"applications"`
	// Objects are the hub's last events about each of the cluster's
	// Applications, AppProjects and repositories up to At, deletions
	// included, in config order, when the query asks for them: the whole
	// desired state then, as `argosy replay redrive` re-publishes it.
	Objects []DesiredObject `json:"objects,omitempty"`
	// Read are the ranges of the log read to answer.
	Read []ReadRange `json:"read"`
}

// DesiredObject is the hub's last event about one object of a cluster: an
// upsert, or a deletion.
type DesiredObject struct {
	// Kind is the subject's kind: applications, appprojects or
	// repositories.
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Deleted    bool   `json:"deleted"`
	// Data is the event's data, as the log holds it
	// (schemas.ApplicationUpserted, schemas.AppProjectDeleted, …).
	Data json.RawMessage `json:"data"`
	From EventRef        `json:"from"`
}

// AsOfApp is one Application: as the hub wanted it and as the cluster
// last reported it, at the time asked, each with the event it comes from.
type AsOfApp struct {
	AppKey
	Desired      *AppDesired  `json:"desired,omitempty"`
	DesiredFrom  *EventRef    `json:"desiredFrom,omitempty"`
	Observed     *AppObserved `json:"observed,omitempty"`
	ObservedFrom *EventRef    `json:"observedFrom,omitempty"`
}

// EventRef names an event and its place in the log.
type EventRef struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	LogTime   time.Time `json:"logTime"`
}

// ReadRange is a range of one partition AsOf read: records from From to To
// (exclusive), of which Events were the cluster's and folded.
type ReadRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Events    int64  `json:"events"`
}

// AsOf answers q from the log: it folds, with Apply, the cluster's config
// events from the start of its config partition up to q.At (desired state
// is everything the hub ever said about it; a replay, View.Replay, changes
// nothing, as in the live views), and its status events of the
// StatusWindow before q.At, read by direct assignment and judged by the
// same events.Intake as the live projector, against the trust topic
// anchored at anchors. Records of other clusters sharing the partitions
// are passed over by their key, undecoded. It takes the WithTopics,
// WithClockMargin, WithDecoderOptions, WithClientOpts ("asof" and
// "trust") and WithLogger options.
func AsOf(ctx context.Context, conn []kgo.Opt, anchors []events.Key, q AsOfQuery, opts ...Option) (*AsOfResult, error) {
	o := newOptions(opts)
	if q.Cluster == "" {
		return nil, errors.New("projector: as-of: a cluster is required")
	}
	if q.StatusWindow <= 0 {
		q.StatusWindow = DefaultStatusWindow
	}
	clients := &clientSet{conn: conn, o: o}
	defer clients.close()
	reader, err := clients.new("asof", kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, reader); err != nil {
		return nil, err
	}
	ranges, err := asOfRanges(ctx, kadm.NewClient(reader), o.topics, q)
	if err != nil {
		return nil, err
	}
	trustClient, err := clients.new("trust", events.TrustConsumeOpts(o.topics)...)
	if err != nil {
		return nil, err
	}
	follower, in, err := o.trusted(anchors, trustClient, nil)
	if err != nil {
		return nil, err
	}
	followCtx, stopFollowing := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() { followed <- follower.Run(followCtx) }() // received below
	res, err := foldAsOf(ctx, reader, in, ranges, q, o)
	stopFollowing()
	return res, errors.Join(err, <-followed)
}

// asOfRanges finds the cluster's config and status partitions and the
// ranges of each to read.
func asOfRanges(ctx context.Context, adm *kadm.Client, topics events.Topics, q AsOfQuery) ([]ReadRange, error) {
	cfg, status := topics[events.TopicConfig], topics[events.TopicStatus]
	ends, err := adm.ListCommittedOffsets(ctx, cfg, status)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s and %s (do the topics exist, and is their prefix right?): %w", cfg, status, err)
	}
	starts, err := adm.ListStartOffsets(ctx, cfg, status)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	// The first offset appended after At's millisecond ends each range.
	after, err := adm.ListOffsetsAfterMilli(ctx, q.At.UnixMilli()+1, cfg, status)
	if err == nil {
		err = after.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets at %s: %w", q.At.Format(time.RFC3339), err)
	}
	windowStart, err := adm.ListOffsetsAfterMilli(ctx, q.At.Add(-q.StatusWindow).UnixMilli(), status)
	if err == nil {
		err = windowStart.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets at %s: %w", q.At.Add(-q.StatusWindow).Format(time.RFC3339), err)
	}
	part := events.NewPartitioner(nil)
	cp := part.PartitionOf(q.Cluster, int32(len(ends[cfg])))
	if q.ConfigPartition != nil {
		cp = *q.ConfigPartition
		if _, ok := ends.Lookup(cfg, cp); !ok {
			return nil, fmt.Errorf("config partition %d: %s has %d partitions", cp, cfg, len(ends[cfg]))
		}
	}
	sp := part.PartitionOf(q.Cluster, int32(len(ends[status])))
	bound := func(topic string, p int32, from kadm.ListedOffsets) ReadRange {
		end, _ := ends.Lookup(topic, p)
		first, _ := starts.Lookup(topic, p)
		r := ReadRange{Topic: topic, Partition: p, From: first.Offset, To: end.Offset}
		if a, ok := after.Lookup(topic, p); ok && a.Offset >= 0 {
			r.To = min(r.To, a.Offset)
		}
		if from != nil {
			if f, ok := from.Lookup(topic, p); ok && f.Offset >= 0 {
				r.From = max(r.From, f.Offset)
			}
		}
		r.From = min(r.From, r.To)
		return r
	}
	return []ReadRange{bound(cfg, cp, nil), bound(status, sp, windowStart)}, nil
}

// foldAsOf reads the ranges, folds the cluster's events into a new view,
// and answers from it.
func foldAsOf(ctx context.Context, reader *kgo.Client, in *events.Intake, ranges []ReadRange, q AsOfQuery, o options) (*AsOfResult, error) {
	res := &AsOfResult{Cluster: q.Cluster, At: q.At, Apps: []AsOfApp{}, Read: ranges}
	consume := map[string]map[int32]kgo.Offset{}
	at := map[Partition]int64{}
	for _, r := range ranges {
		if r.From < r.To {
			consume[r.Topic] = map[int32]kgo.Offset{r.Partition: kgo.NewOffset().At(r.From)}
			at[Partition{r.Topic, r.Partition}] = r.From
		}
	}
	reader.AddConsumePartitions(consume)
	view := NewView()
	src := asOfSources{desired: map[AppKey]*EventRef{}, observed: map[AppKey]*EventRef{}, objects: map[string]*DesiredObject{}}
	folded := map[Partition]int64{}
	for len(at) > 0 {
		fs := reader.PollRecords(ctx, o.maxRecords)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := fetchError(ctx, fs, o.Log); err != nil {
			return nil, err
		}
		var recs []*kgo.Record
		for _, rec := range fs.Records() {
			p := Partition{rec.Topic, rec.Partition}
			if _, reading := at[p]; !reading {
				continue
			}
			// A read-committed reader never gets aborted records: a range
			// may end with some, and the first record after it is what
			// shows the partition read.
			end := rangeEnd(ranges, p)
			if at[p] = min(rec.Offset, end-1) + 1; at[p] >= end {
				delete(at, p)
				reader.PauseFetchPartitions(map[string][]int32{p.Topic: {p.Partition}})
			}
			if rec.Offset >= end {
				continue
			}
			// Keys are not signed: another cluster's key is passed over,
			// and a decoded event about another cluster below too.
			if !rec.Attrs.IsControl() && string(rec.Key) == q.Cluster {
				recs = append(recs, rec)
			}
		}
		all, causes, err := decodeAll(ctx, in, recs)
		if err != nil {
			return nil, err
		}
		for i, d := range all {
			if d == nil {
				if causes[i] != nil {
					o.Log.WarnContext(ctx, "record refused", "topic", recs[i].Topic, "partition", recs[i].Partition,
						"offset", recs[i].Offset, "reason", events.Reason(causes[i]))
				}
				continue
			}
			if d.Subject.Cluster != q.Cluster {
				continue
			}
			// A replay changes no row: it is no object's last event, and
			// no row comes from it.
			replay := view.Replay(d)
			if err := Apply(view, d); err != nil {
				o.Log.WarnContext(ctx, "event the fold refuses", "topic", d.Topic, "offset", d.Offset, "err", err)
				continue
			}
			folded[Partition{d.Topic, d.Partition}]++
			if replay != "" {
				o.Log.WarnContext(ctx, "replay refused", "topic", d.Topic, "partition", d.Partition, "offset", d.Offset,
					"type", d.Spec.Type, "reason", replay)
				continue
			}
			src.note(d, d.Topic == o.topics[events.TopicConfig], q.Objects)
		}
	}
	for i := range res.Read {
		res.Read[i].Events = folded[Partition{res.Read[i].Topic, res.Read[i].Partition}]
	}
	b := view.Flush()
	res.answer(b, q, src.desired, src.observed)
	for _, ob := range src.objects {
		if q.App == "" || (ob.Kind == schemas.SubjectApplications && ob.Name == q.App) {
			res.Objects = append(res.Objects, *ob)
		}
	}
	slices.SortFunc(res.Objects, func(a, b DesiredObject) int { return cmp.Compare(a.From.Offset, b.From.Offset) })
	if res.Registration == nil && res.Heartbeat == nil && len(res.Apps) == 0 && len(res.Objects) == 0 {
		return nil, fmt.Errorf("%w: cluster %s up to %s (read %s/%d and %s/%d; is the name right, or is the cluster pinned to another config partition?)",
			ErrNothingKnown, q.Cluster, q.At.Format(time.RFC3339Nano), ranges[0].Topic, ranges[0].Partition, ranges[1].Topic, ranges[1].Partition)
	}
	return res, nil
}

// asOfSources are the events an as-of answer's rows come from: each
// Application's last event that changed its desired row and its observed
// row, and with AsOfQuery.Objects each object's last upsert or deletion.
type asOfSources struct {
	desired, observed map[AppKey]*EventRef
	objects           map[string]*DesiredObject
}

// note takes d, an event of the cluster that changed a row (no replay),
// from the config topic or not, and objects if the query asks for them.
func (s asOfSources) note(d *events.Decoded, config, objects bool) {
	states := events.StatesObject(d.Spec.Type)
	if objects && config && d.Subject.Kind != "" && states {
		s.objects[events.DesiredKey(d.Subject)] = desiredObject(d)
	}
	if d.Subject.Kind != schemas.SubjectApplications || (config && !states) {
		return // an operation changes no desired row
	}
	key := AppKey{Cluster: d.Subject.Cluster, Namespace: d.Subject.Namespace, Name: d.Subject.Name}
	ref := &EventRef{ID: d.Event.ID(), Type: d.Spec.Type, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, LogTime: d.LogTime}
	if config {
		s.desired[key] = ref
	} else {
		s.observed[key] = ref
	}
}

// desiredObject is d, an upsert or a deletion of an object, as a
// DesiredObject.
func desiredObject(d *events.Decoded) *DesiredObject {
	ob := &DesiredObject{Kind: d.Subject.Kind, Namespace: d.Subject.Namespace, Name: d.Subject.Name, Data: d.Event.Data(),
		From: EventRef{ID: d.Event.ID(), Type: d.Spec.Type, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, LogTime: d.LogTime}}
	switch p := d.Data.(type) {
	case *schemas.ApplicationUpserted:
		ob.Generation = p.Generation
	case *schemas.AppProjectUpserted:
		ob.Generation = p.Generation
	case *schemas.RepositoryUpserted:
		ob.Generation = p.Generation
	case *schemas.ApplicationDeleted:
		ob.Generation, ob.Deleted = p.Generation, true
	case *schemas.AppProjectDeleted:
		ob.Generation, ob.Deleted = p.Generation, true
	case *schemas.RepositoryDeleted:
		ob.Generation, ob.Deleted = p.Generation, true
	}
	return ob
}

// answer fills r from the rows a fold of the cluster's events wrote.
func (r *AsOfResult) answer(b *Batch, q AsOfQuery, desiredFrom, observedFrom map[AppKey]*EventRef) {
	for i := range b.Registrations {
		if b.Registrations[i].Cluster == q.Cluster {
			r.Registration = &b.Registrations[i]
		}
	}
	for i := range b.Beats {
		if b.Beats[i].Cluster == q.Cluster {
			r.Heartbeat = &b.Beats[i]
		}
	}
	apps := map[AppKey]*AsOfApp{}
	app := func(k AppKey) *AsOfApp {
		if apps[k] == nil {
			apps[k] = &AsOfApp{AppKey: k}
		}
		return apps[k]
	}
	for i := range b.Desired {
		if d := &b.Desired[i]; q.App == "" || d.Name == q.App {
			a := app(d.AppKey)
			a.Desired, a.DesiredFrom = d, desiredFrom[d.AppKey]
		}
	}
	for i := range b.Observed {
		if ob := &b.Observed[i]; q.App == "" || ob.Name == q.App {
			a := app(ob.AppKey)
			a.Observed, a.ObservedFrom = ob, observedFrom[ob.AppKey]
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(apps), func(a, b AppKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}) {
		r.Apps = append(r.Apps, *apps[k])
	}
}

func rangeEnd(ranges []ReadRange, p Partition) int64 {
	for _, r := range ranges {
		if r.Topic == p.Topic && r.Partition == p.Partition {
			return r.To
		}
	}
	return 0
}

// fetchError returns the errors of a poll that reading on cannot fix.
// Records gone from the broker (retention) are not one: they are logged,
// and reading goes on from the earliest left.
func fetchError(ctx context.Context, fs kgo.Fetches, log *slog.Logger) error {
	var errs []error
	fs.EachError(func(t string, p int32, err error) {
		var loss *kgo.ErrDataLoss
		if errors.As(err, &loss) {
			log.WarnContext(ctx, "records gone from the broker while reading (retention?); reading on", "topic", t, "partition", p, "err", err)
			return
		}
		errs = append(errs, fmt.Errorf("fetch %s/%d: %w", t, p, err))
	})
	return errors.Join(errs...)
}
