package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	reader, err := clients.new("asof", events.RangeConsumeOpts()...)
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
// ranges of each to read: the config partition from its start and the
// status partition from the status window's start, both to the first
// offset appended after At's millisecond.
func asOfRanges(ctx context.Context, adm *kadm.Client, topics events.Topics, q AsOfQuery) ([]ReadRange, error) {
	cfg, status := topics[events.TopicConfig], topics[events.TopicStatus]
	to := q.At.Truncate(time.Millisecond).Add(time.Millisecond)
	cfgRanges, err := events.PlanRanges(ctx, adm, []string{cfg}, events.Bounds{To: to})
	if err != nil {
		return nil, fmt.Errorf("as-of: %w (is the topics' prefix right?)", err)
	}
	statusRanges, err := events.PlanRanges(ctx, adm, []string{status}, events.Bounds{From: q.At.Add(-q.StatusWindow), To: to})
	if err != nil {
		return nil, fmt.Errorf("as-of: %w (is the topics' prefix right?)", err)
	}
	part := events.NewPartitioner(nil)
	cp := part.PartitionOf(q.Cluster, int32(len(cfgRanges)))
	if q.ConfigPartition != nil {
		cp = *q.ConfigPartition
		if cp < 0 || int(cp) >= len(cfgRanges) {
			return nil, fmt.Errorf("config partition %d: %s has %d partitions", cp, cfg, len(cfgRanges))
		}
	}
	sp := part.PartitionOf(q.Cluster, int32(len(statusRanges)))
	read := func(r events.Range) ReadRange {
		return ReadRange{Topic: r.Topic, Partition: r.Partition, From: r.From, To: r.To}
	}
	return []ReadRange{read(cfgRanges[cp]), read(statusRanges[sp])}, nil
}

// foldAsOf reads the ranges, folds the cluster's events into a new view,
// and answers from it.
func foldAsOf(ctx context.Context, client *kgo.Client, in *events.Intake, ranges []ReadRange, q AsOfQuery, o options) (*AsOfResult, error) {
	res := &AsOfResult{Cluster: q.Cluster, At: q.At, Apps: []AsOfApp{}, Read: ranges}
	var spans []events.Range
	for _, r := range ranges {
		spans = append(spans, events.Range{Topic: r.Topic, Partition: r.Partition, From: r.From, To: r.To})
	}
	reader, err := events.NewRangeReader(client, spans)
	if err != nil {
		return nil, err
	}
	f := &asOfFold{q: q, o: o, in: in, view: NewView(), folded: map[Partition]int64{},
		src: asOfSources{desired: map[AppKey]*EventRef{}, observed: map[AppKey]*EventRef{}, objects: map[string]*DesiredObject{}}}
	for {
		recs, err := readOn(ctx, reader, o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := f.fold(ctx, recs); err != nil {
			return nil, err
		}
	}
	for i := range res.Read {
		res.Read[i].Events = f.folded[Partition{res.Read[i].Topic, res.Read[i].Partition}]
	}
	res.answer(f.view.Flush(), q, f.src.desired, f.src.observed)
	for _, ob := range f.src.objects {
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

// asOfFold is an as-of answer's fold of the cluster's events.
type asOfFold struct {
	q      AsOfQuery
	o      options
	in     *events.Intake
	view   *View
	src    asOfSources
	folded map[Partition]int64
}

// fold decodes one poll's records of the cluster and folds them.
func (f *asOfFold) fold(ctx context.Context, polled []*kgo.Record) error {
	var recs []*kgo.Record
	for _, rec := range polled {
		// Keys are not signed: another cluster's key is passed over,
		// and a decoded event about another cluster below too.
		if !rec.Attrs.IsControl() && string(rec.Key) == f.q.Cluster {
			recs = append(recs, rec)
		}
	}
	all, causes, err := decodeAll(ctx, f.in, recs)
	if err != nil {
		return err
	}
	for i, d := range all {
		if d == nil {
			if causes[i] != nil {
				f.o.Log.WarnContext(ctx, "record refused", "topic", recs[i].Topic, "partition", recs[i].Partition,
					"offset", recs[i].Offset, "reason", events.Reason(causes[i]))
			}
			continue
		}
		if d.Subject.Cluster != f.q.Cluster {
			continue
		}
		// A replay changes no row: it is no object's last event, and
		// no row comes from it.
		replay := f.view.Replay(d)
		if err := Apply(f.view, d); err != nil {
			f.o.Log.WarnContext(ctx, "event the fold refuses", "topic", d.Topic, "offset", d.Offset, "err", err)
			continue
		}
		f.folded[Partition{d.Topic, d.Partition}]++
		if replay != "" {
			f.o.Log.WarnContext(ctx, "replay refused", "topic", d.Topic, "partition", d.Partition, "offset", d.Offset,
				"type", d.Spec.Type, "reason", replay)
			continue
		}
		f.src.note(d, d.Topic == f.o.topics[events.TopicConfig], f.q.Objects)
	}
	return nil
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

// readOn returns the next records of reader, at most o.maxRecords. Records
// gone from the broker (retention) are not an error: they are logged, and
// reading goes on from the earliest left.
func readOn(ctx context.Context, reader *events.RangeReader, o options) ([]*kgo.Record, error) {
	for {
		recs, err := reader.Poll(ctx, o.maxRecords)
		if !dataLoss(err) {
			return recs, err
		}
		o.Log.WarnContext(ctx, "records gone from the broker while reading (retention?); reading on", "err", err)
	}
}

// dataLoss tells whether err is only records gone from the broker.
func dataLoss(err error) bool {
	errs := []error{err}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var loss *kgo.ErrDataLoss
		if !errors.As(e, &loss) {
			return false
		}
	}
	return err != nil
}
