package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
)

// tracer is the projector's tracer from the global provider, which cmd sets.
func tracer() trace.Tracer { return otel.Tracer("github.com/argosyproj/argosy/projector") }

// Topics the projector folds.
var foldedTopics = []events.Topic{events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit}

// maxCommitLinks bounds the links from a commit span to the fold spans it
// stores: OpenTelemetry's SDK keeps 128 links per span by default.
const maxCommitLinks = 128

// Runner folds the config, status, deployments and audit topics into a
// Store, exactly once. It consumes in a consumer group, so replicas share the
// partitions, but its offsets live in the store, written in the same
// transaction as the rows they produced: on assignment it starts each
// partition from the store's offset, and a crash at any point loses the
// uncommitted step as a whole, to be folded again.
//
// Records that do not decode (malformed, forged, unknown, …) go to the
// dead-letter topic with their reason before the step that skips them is
// committed; the projector never stops on them. Records whose keys the
// trust registry has not caught up with are retried.
type Runner struct {
	client  *kgo.Client
	dec     *events.Decoder
	dlq     *events.DeadLetter
	store   Store
	log     *slog.Logger
	topics  events.Topics
	maxRecs int

	mu       sync.Mutex // guards view and assigned between the poll loop and rebalance callbacks
	view     *View
	assigned map[Partition]bool
	lags     lags // its own lock, taken after mu, so a metrics scrape never waits on a step
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Group  string
	Topics events.Topics
	// MaxRecords bounds one fold step; zero means 10,000.
	MaxRecords int
}

// NewRunner returns a Runner and the client it consumes with, built from
// conn (seed brokers, TLS, SASL, telemetry hooks). The caller closes the
// client after Run returns.
func NewRunner(conn []kgo.Opt, cfg RunnerConfig, dec *events.Decoder, dlqClient *kgo.Client, store Store, log *slog.Logger) (*Runner, *kgo.Client, error) {
	if cfg.Group == "" {
		return nil, nil, errors.New("projector: a consumer group is required")
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = 10_000
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{dec: dec, store: store, log: log, topics: cfg.Topics, maxRecs: cfg.MaxRecords, view: NewView(),
		assigned: map[Partition]bool{}, lags: lags{by: map[Partition]int64{}}}
	var names []string
	for _, t := range foldedTopics {
		names = append(names, cfg.Topics[t])
	}
	opts := append(append([]kgo.Opt{}, conn...),
		kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(names...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come too, so that a partition's stored
		// offset reaches its end, past the last commit marker.
		kgo.KeepControlRecords(),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.AdjustFetchOffsetsFn(r.storedOffsets),
		kgo.OnPartitionsAssigned(r.assign), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, err
	}
	r.client = cl
	r.dlq = events.NewDeadLetter(dlqClient, cfg.Topics[events.TopicDeadLetter])
	return r, cl, nil
}

// CloseClient closes a Runner's client after Run has returned, waiting at
// most d, and reports whether it closed in time. Leaving the group waits
// for a join in flight, and a join lasts until every member the coordinator
// knows has rejoined or timed out: a replica killed a moment ago holds it
// for its whole session timeout. The store has the offsets, so giving up on
// the leave loses nothing; the group drops this member after its session
// timeout. Past d, Close goes on in a goroutine of its own: call this only
// on the way out of the process.
func CloseClient(cl *kgo.Client, d time.Duration) bool {
	closed := make(chan struct{})
	go func() {
		cl.Close()
		close(closed)
	}()
	select {
	case <-closed:
		return true
	case <-time.After(d):
		return false
	}
}

// storedOffsets starts newly assigned partitions from the store's offsets.
func (r *Runner) storedOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var ps []Partition
	for t, parts := range offsets {
		for p := range parts {
			ps = append(ps, Partition{t, p})
		}
	}
	stored, err := r.store.Offsets(ctx, ps)
	if err != nil {
		return nil, fmt.Errorf("projector: stored offsets: %w", err)
	}
	for p, at := range stored {
		offsets[p.Topic][p.Partition] = kgo.NewOffset().At(at)
	}
	return offsets, nil
}

func (r *Runner) assign(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, parts := range ps {
		for _, p := range parts {
			r.assigned[Partition{t, p}] = true
		}
	}
}

// forget drops the working set when partitions go: another replica may
// change their rows from now on. Every step is committed before a
// rebalance can run (BlockRebalanceOnPoll), so nothing is lost.
func (r *Runner) forget(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.view.Forget()
	for t, parts := range ps {
		for _, p := range parts {
			delete(r.assigned, Partition{t, p})
		}
	}
	r.lags.drop(ps)
}

// Run folds until ctx ends. It returns an error only when the store refuses
// a step in a way retrying cannot fix.
func (r *Runner) Run(ctx context.Context) error {
	// A poll blocks rebalances until AllowRebalance; leaving the group at
	// Close is a rebalance, so Close would hang after the last poll.
	defer r.client.AllowRebalance()
	defer r.lags.drop(nil)
	defer r.lags.observe()()
	backoff := 100 * time.Millisecond
	for {
		fs := r.client.PollRecords(ctx, r.maxRecs)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(t string, p int32, err error) {
			r.log.WarnContext(ctx, "fetch failed", "topic", t, "partition", p, "err", err)
		})
		recs := fs.Records()
		started := time.Now()
		folded, err := r.step(ctx, recs)
		if len(recs) > 0 && (err == nil || ctx.Err() == nil) { // not a step cut short by the stop
			recordStep(ctx, started, folded, err)
		}
		if err == nil {
			r.lags.set(fs)
		}
		if err == nil && len(recs) > 0 {
			// The store holds the truth; the group's own offsets only let
			// Kafka tools show the projector's lag. Outside the working
			// set's lock, so a rebalance callback never waits on Kafka.
			if cerr := r.client.CommitRecords(ctx, recs...); cerr != nil && ctx.Err() == nil {
				r.log.WarnContext(ctx, "commit offsets to the consumer group (for lag only)", "err", cerr)
			}
		}
		if err != nil && ctx.Err() != nil {
			// Stopping: the store holds the offsets before this step, so
			// the next run folds it again.
			return nil
		}
		if err != nil {
			r.log.ErrorContext(ctx, "fold step not committed; folding again from the stored offsets", "err", err)
			if rerr := r.rewind(ctx); rerr != nil {
				return errors.Join(err, rerr)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		} else {
			backoff = 100 * time.Millisecond
		}
		r.client.AllowRebalance()
	}
}

// step folds one poll's records and commits them with their offsets. It
// returns the types of the events it folded.
func (r *Runner) step(ctx context.Context, recs []*kgo.Record) ([]string, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	all, causes, err := r.decodeAll(ctx, recs)
	if err != nil {
		return nil, err // the store cannot be ahead of what was folded
	}
	var rejected []events.Rejected
	decoded := make([]*events.Decoded, 0, len(recs))
	source := make([]*kgo.Record, 0, len(recs))
	for i, rec := range recs {
		if all[i] == nil { // a transaction marker, or a record to dead-letter
			if causes[i] != nil {
				rejected = append(rejected, events.Rejected{Record: rec, Cause: causes[i]})
			}
			r.view.Advance(rec.Topic, rec.Partition, rec.Offset)
			continue
		}
		decoded, source = append(decoded, all[i]), append(source, rec)
	}
	if err := r.load(ctx, decoded); err != nil {
		return nil, err
	}
	folded, links, rejected := r.fold(ctx, decoded, source, rejected)
	// Every rejected record is durable in the dead-letter topic before the
	// step that skips it commits; one batch, not a round trip each.
	if err := r.dlq.SendAll(ctx, rejected...); err != nil {
		return nil, err
	}
	for _, rj := range rejected {
		r.log.WarnContext(ctx, "record dead-lettered", "topic", rj.Record.Topic, "partition", rj.Record.Partition,
			"offset", rj.Record.Offset, "err", rj.Cause)
	}
	cctx, span := tracer().Start(ctx, "projector.commit", trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("argosy.records", len(recs))))
	err = r.store.Commit(cctx, r.view.Flush())
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "store commit failed")
	}
	span.End()
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return folded, nil
}

// decodeAll decodes recs on every core: verification is most of the cost
// of a step. A record that does not decode has a nil event and its cause.
func (r *Runner) decodeAll(ctx context.Context, recs []*kgo.Record) ([]*events.Decoded, []error, error) {
	all := make([]*events.Decoded, len(recs))
	causes := make([]error, len(recs))
	// One worker per core takes the next record: a goroutine per record
	// would grow a fresh stack for each.
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range min(runtime.GOMAXPROCS(0), len(recs)) {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < len(recs); i = int(next.Add(1) - 1) {
				var err error
				if all[i], causes[i], err = r.decode(gctx, recs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return all, causes, g.Wait()
}

// load reads into the working set the rows that folding decoded needs and
// it does not hold.
func (r *Runner) load(ctx context.Context, decoded []*events.Decoded) error {
	need := &Need{}
	for _, d := range decoded {
		n := Needs(d)
		need.Registrations = append(need.Registrations, n.Registrations...)
		need.Desired = append(need.Desired, n.Desired...)
		need.Observed = append(need.Observed, n.Observed...)
		need.ChainHeads = append(need.ChainHeads, n.ChainHeads...)
	}
	missing := r.view.Missing(need)
	if missing.empty() {
		return nil
	}
	rows, err := r.store.Load(ctx, missing)
	if err != nil {
		return fmt.Errorf("load rows: %w", err)
	}
	r.view.Merge(missing, rows)
	return nil
}

// fold applies decoded in order. It returns the types folded, links to the
// fold spans for the commit span, and rejected with the events the fold
// could not take added.
func (r *Runner) fold(ctx context.Context, decoded []*events.Decoded, source []*kgo.Record,
	rejected []events.Rejected) ([]string, []trace.Link, []events.Rejected) {
	folded := make([]string, 0, len(decoded))
	var links []trace.Link
	for i, d := range decoded {
		// Each fold continues the trace the event carries, so a change can
		// be followed from the CLI to the views.
		_, span := tracer().Start(events.ContextWithTrace(ctx, d), "projector.fold "+d.Spec.Type,
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
				attribute.String("messaging.destination.name", d.Topic),
				attribute.String("messaging.destination.partition.id", strconv.Itoa(int(d.Partition))),
				attribute.Int64("messaging.kafka.offset", d.Offset),
				attribute.String("cloudevents.event_id", d.Event.ID())))
		err := Apply(r.view, d)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "dead-lettered: the fold cannot take it")
		}
		if len(links) < maxCommitLinks {
			links = append(links, trace.Link{SpanContext: span.SpanContext()})
		}
		span.End()
		if err != nil {
			// A valid event the fold cannot take (a spec that is not
			// JSON, say): dead-letter it like bad input.
			rejected = append(rejected, events.Rejected{Record: source[i], Cause: events.Poison(err)})
			r.view.Advance(d.Topic, d.Partition, d.Offset)
			continue
		}
		folded = append(folded, d.Spec.Type)
	}
	return folded, links, rejected
}

// decode returns the decoded record, or the reason it does not decode
// (malformed, forged, unknown, …), to be dead-lettered; a transaction
// marker has neither. ErrKeysBehind is retried here until the trust
// registry catches up; err is only ctx's.
func (r *Runner) decode(ctx context.Context, rec *kgo.Record) (d *events.Decoded, cause, err error) {
	if rec.Attrs.IsControl() {
		return nil, nil, nil // a transaction marker: nothing to fold
	}
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		d, err := r.dec.Decode(ctx, rec)
		switch {
		case err == nil:
			return d, nil, nil
		case errors.Is(err, events.ErrKeysBehind):
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(wait):
			}
		default:
			return nil, err, nil
		}
	}
}

// rewind drops the working set and seeks every assigned partition back to
// the store's offsets, after a step that was not committed.
func (r *Runner) rewind(ctx context.Context) error {
	r.mu.Lock()
	r.view.Forget()
	var ps []Partition
	for p := range r.assigned {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	stored, err := r.store.Offsets(ctx, ps)
	if err != nil {
		return err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, p := range ps {
		at, ok := stored[p]
		if !ok {
			at = 0
		}
		if set[p.Topic] == nil {
			set[p.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: -1, Offset: at}
	}
	r.client.SetOffsets(set)
	return nil
}

func (n *Need) empty() bool {
	return len(n.Registrations)+len(n.Beats)+len(n.Desired)+len(n.Observed)+len(n.ChainHeads) == 0
}
