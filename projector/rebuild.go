package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
)

// ErrStoreNotEmpty is returned by Rebuild.Run when the store already holds
// views: a rebuild writes only into a store nothing has folded into, so
// that it can never overwrite the live views.
var ErrStoreNotEmpty = errors.New("the store already holds views folded from the log")

// From is where a Rebuild starts reading each partition of the folded
// topics. The zero From is the start of the log: the earliest records
// the broker still holds.
type From struct {
	// Time, unless zero, starts each partition at its first record
	// appended at or after it, to the millisecond (log times are in
	// milliseconds: a record stamped in Time's millisecond is included).
	Time time.Time
	// Offsets start the partitions they name there; the rest start as
	// Time says.
	Offsets map[Partition]int64
}

// Progress is how far a Rebuild has come.
type Progress struct {
	// Partitions is the number of partitions with records to fold.
	Partitions int `json:"partitions"`
	// Records of the range read, of Total.
	Records int64 `json:"records"`
	Total   int64 `json:"total"`
	// Events folded, and records refused (by the decoder or the fold;
	// the live projector dead-lettered them, a rebuild only logs them).
	Events  int64 `json:"events"`
	Refused int64 `json:"refused"`
	// Elapsed since the rebuild began reading.
	Elapsed time.Duration `json:"elapsed"`
	// Done is set on the last report, once every partition is folded to
	// the end it had when the rebuild began, and committed.
	Done bool `json:"done"`
}

// Rebuild folds a range of the log, from a starting point to the end each
// partition had when it began, into a store that holds nothing yet. It
// takes the Folder's steps, the projector's own fold, over records read
// by direct assignment (no consumer group) and judged by the same
// events.Intake the live projector uses, against the keys of the trust
// topic, which it follows as the Service does. Records refused are only
// logged: the live projector dead-lettered them when it met them.
//
// Rebuilt from the start, the store holds what the live projector's
// store holds at the same offsets: the same rows, audit chains and
// offsets, so it can take the live store's place.
type Rebuild struct {
	conn     []kgo.Opt
	store    Store
	anchors  []events.Key
	from     From
	opts     []Option
	o        options
	progress func(Progress)
}

// NewRebuild returns a Rebuild into store from from, connecting to Kafka
// with conn and trusting what anchors sign. It takes the WithTopics,
// WithMaxRecords, WithClockMargin, WithDecoderOptions, WithClientOpts
// ("rebuild" and "trust"), WithProgress, WithLogger and WithTracerProvider
// options.
func NewRebuild(conn []kgo.Opt, store Store, anchors []events.Key, from From, opts ...Option) (*Rebuild, error) {
	o := newOptions(opts)
	if err := errors.Join(checkReader(conn, store, anchors, o)...); err != nil {
		return nil, fmt.Errorf("projector: rebuild: %w", err)
	}
	return &Rebuild{conn: conn, store: store, anchors: anchors, from: from, opts: opts, o: o, progress: o.progress}, nil
}

// WithProgress makes a Rebuild report its progress to f after every step
// it commits, and once more when it is done. f is called from Run's
// goroutine and should return quickly.
func WithProgress(f func(Progress)) Option { return func(o *options) { o.progress = f } }

// Run rebuilds, and returns nil once every partition is folded to its end
// and committed. It returns ErrStoreNotEmpty, having changed nothing, when
// the store holds offsets of any folded partition.
func (r *Rebuild) Run(ctx context.Context) (err error) {
	ctx, span := r.o.tracer().Start(ctx, "projector.rebuild")
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "rebuild failed")
		}
		span.End()
	}()
	clients := &clientSet{conn: r.conn, o: r.o}
	defer clients.close()
	// One client lists the offsets and then reads the ranges.
	client, err := clients.new("rebuild", append(events.RangeConsumeOpts(), kgo.FetchMaxBytes(16<<20))...)
	if err != nil {
		return err
	}
	if err := ping(ctx, client); err != nil {
		return err
	}
	ranges, err := r.plan(ctx, kadm.NewClient(client))
	if err != nil {
		return err
	}
	p := Progress{}
	for _, rg := range ranges {
		if rg.From < rg.To {
			p.Partitions, p.Total = p.Partitions+1, p.Total+rg.To-rg.From
		}
	}
	span.SetAttributes(attribute.Int("argosy.partitions", p.Partitions), attribute.Int64("argosy.records", p.Total))
	if p.Partitions == 0 {
		r.report(Progress{Done: true})
		return nil
	}
	reader, err := events.NewRangeReader(client, ranges)
	if err != nil {
		return err
	}
	trustClient, err := clients.new("trust", events.TrustConsumeOpts(r.o.topics)...)
	if err != nil {
		return err
	}
	follower, in, err := r.o.trusted(r.anchors, trustClient, nil)
	if err != nil {
		return err
	}
	folder, err := NewFolder(r.store, r.opts...)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	followCtx, stopFollowing := context.WithCancel(gctx)
	g.Go(func() error { return follower.Run(followCtx) })
	g.Go(func() error {
		defer stopFollowing()
		f := &rebuildFold{r: r, reader: reader, in: in, folder: folder, p: p, began: time.Now()}
		return f.run(gctx)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

func (r *Rebuild) report(p Progress) {
	if r.progress != nil {
		r.progress(p)
	}
}

// plan lists each folded partition's range: its start as r.from says, and
// its end (the last stable offset, so that no open transaction is waited
// for) as of now. It returns ErrStoreNotEmpty if the store holds an
// offset of any of them.
func (r *Rebuild) plan(ctx context.Context, adm *kadm.Client) ([]events.Range, error) {
	var names []string
	for _, t := range foldedTopics {
		names = append(names, r.o.topics[t])
	}
	b := events.Bounds{From: r.from.Time, Offsets: map[string]map[int32]int64{}}
	for p, at := range r.from.Offsets {
		if b.Offsets[p.Topic] == nil {
			b.Offsets[p.Topic] = map[int32]int64{}
		}
		b.Offsets[p.Topic][p.Partition] = at
	}
	ranges, err := events.PlanRanges(ctx, adm, names, b)
	if err != nil {
		return nil, fmt.Errorf("%w (is the topics' prefix right?)", err)
	}
	ps := make([]Partition, 0, len(ranges))
	for _, rg := range ranges {
		ps = append(ps, Partition{rg.Topic, rg.Partition})
	}
	if err := r.checkEmpty(ctx, ps); err != nil {
		return nil, err
	}
	return ranges, nil
}

// checkEmpty returns ErrStoreNotEmpty if the store holds an offset of any
// of ps, the partitions of the folded topics.
func (r *Rebuild) checkEmpty(ctx context.Context, ps []Partition) error {
	held, err := r.store.Offsets(ctx, ps)
	if err != nil {
		return fmt.Errorf("read the store's offsets: %w", err)
	}
	if len(held) > 0 {
		return fmt.Errorf("%w (offsets of %d partitions): rebuild into a new, empty store", ErrStoreNotEmpty, len(held))
	}
	return nil
}

// rebuildFold reads, decodes, folds and commits a Rebuild's ranges.
type rebuildFold struct {
	r      *Rebuild
	reader *events.RangeReader
	in     *events.Intake
	folder *Folder
	p      Progress
	began  time.Time
}

// run decodes each poll's records while it folds and commits the poll
// before, as the live Runner does, until every range is folded.
func (f *rebuildFold) run(ctx context.Context) error {
	held, err := f.poll(ctx)
	for err == nil && held != nil {
		next := make(chan polledResult, 1)
		pctx, cancel := context.WithCancel(ctx)
		go func() { p, err := f.poll(pctx); next <- polledResult{p, err} }() // received below on every path
		err = f.step(ctx, held)
		if err != nil {
			cancel()
		}
		res := <-next
		cancel()
		if err == nil {
			held, err = res.p, res.err
		}
	}
	if err != nil {
		return err
	}
	f.p.Records, f.p.Elapsed, f.p.Done = f.reader.Passed(), time.Since(f.began), true
	f.r.report(f.p)
	return nil
}

// rebuildPoll is one poll's records of the ranges, decoded.
type rebuildPoll struct {
	*polled
	// advanced is how far the poll moved the partitions' offsets, in
	// records: more than the records when aborted ones were skipped.
	advanced int64
}

type polledResult struct {
	p   *rebuildPoll
	err error
}

// poll reads the next records of the ranges and decodes them. It returns
// nil records once every range is read.
func (f *rebuildFold) poll(ctx context.Context) (*rebuildPoll, error) {
	before := f.reader.Passed()
	recs, err := readOn(ctx, f.reader, f.r.o)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := &rebuildPoll{polled: &polled{recs: recs, started: time.Now()}, advanced: f.reader.Passed() - before}
	if out.all, out.causes, err = decodeAll(ctx, f.in, recs); err != nil {
		return nil, err
	}
	return out, nil
}

// step folds one poll's records and commits them with their offsets.
func (f *rebuildFold) step(ctx context.Context, p *rebuildPoll) error {
	folded, refused, err := foldRecords(ctx, f.folder, f.in, p.recs, p.all, p.causes)
	if err != nil {
		return err
	}
	if err := f.folder.Commit(ctx, len(p.recs)); err != nil {
		return err
	}
	f.p.Records += p.advanced
	f.p.Events += int64(len(folded.Types))
	f.p.Refused += int64(refused)
	f.p.Elapsed = time.Since(f.began)
	f.r.report(f.p)
	return nil
}
