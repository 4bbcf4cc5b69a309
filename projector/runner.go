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

	// rebalanceWaiting is set when a rebalance waits for the records Run
	// holds; cancelPoll stops the poll in flight.
	rebalanceWaiting atomic.Bool
	pollMu           sync.Mutex
	cancelPoll       context.CancelFunc
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
		kgo.OnPartitionsAssigned(r.assign), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget),
		kgo.OnPartitionsCallbackBlocked(r.rebalanceBlocked))
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

// polled is one poll's records, decoded.
type polled struct {
	fs     kgo.Fetches
	recs   []*kgo.Record
	all    []*events.Decoded // nil for a transaction marker or a record to dead-letter
	causes []error           // why all[i] is nil, unless a marker
	// started is when the poll returned, for the step duration.
	started time.Time
}

// Run folds until ctx ends. It returns an error only when the store refuses
// a step in a way retrying cannot fix.
//
// Decoding, mostly signature verification, is most of a step's cost, so
// Run decodes each poll's records on every core while it folds and commits
// the poll before. Rebalances stay blocked from a poll until its records
// are committed (BlockRebalanceOnPoll), so a partition never moves while
// its records are held; when a rebalance waits, Run folds what it holds
// and lets it run.
func (r *Runner) Run(ctx context.Context) error {
	// A poll blocks rebalances until AllowRebalance; leaving the group at
	// Close is a rebalance, so Close would hang after the last poll.
	defer r.client.AllowRebalance()
	defer r.lags.drop(nil)
	defer r.lags.observe()()
	backoff := 100 * time.Millisecond
	var held *polled // decoded, not yet folded
	for {
		next, err := r.pollWhileFolding(ctx, held)
		if err == nil && next != nil && r.rebalanceWaiting.Load() {
			err, next = r.step(ctx, next), nil
		}
		if ctx.Err() != nil {
			// Stopping: the store holds the offsets before what was not
			// committed, so the next run folds it again.
			return nil
		}
		held = next
		if err != nil {
			held = nil
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
		if held == nil {
			r.rebalanceWaiting.Store(false)
			r.client.AllowRebalance()
		}
	}
}

// pollWhileFolding polls and decodes the next records while it folds and
// commits held. It stops waiting for records once held failed or a
// rebalance waits. It returns nil records when the poll brought none.
func (r *Runner) pollWhileFolding(ctx context.Context, held *polled) (*polled, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.pollMu.Lock()
	r.cancelPoll = cancel
	r.pollMu.Unlock()
	defer func() {
		r.pollMu.Lock()
		r.cancelPoll = nil
		r.pollMu.Unlock()
	}()
	if held == nil {
		return r.pollDecode(ctx, pctx), nil
	}
	next := make(chan *polled, 1)
	go func() { next <- r.pollDecode(ctx, pctx) }() // received below on every path
	err := r.step(ctx, held)
	if err != nil || r.rebalanceWaiting.Load() {
		cancel()
	}
	p := <-next
	if err != nil {
		return nil, err // the rewind drops p
	}
	return p, nil
}

// rebalanceBlocked is called when a rebalance waits for the records Run
// holds: it stops a poll that waits for more.
func (r *Runner) rebalanceBlocked(context.Context, *kgo.Client) {
	r.rebalanceWaiting.Store(true)
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	if r.cancelPoll != nil {
		r.cancelPoll()
	}
}

// pollDecode polls with pctx and decodes what it got with ctx: once polled,
// records are decoded whole unless Run is stopping.
func (r *Runner) pollDecode(ctx, pctx context.Context) *polled {
	fs := r.client.PollRecords(pctx, r.maxRecs)
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.Canceled) {
			r.log.WarnContext(ctx, "fetch failed", "topic", t, "partition", p, "err", err)
		}
	})
	p := &polled{fs: fs, recs: fs.Records(), started: time.Now()}
	if len(p.recs) == 0 {
		return nil
	}
	var err error
	if p.all, p.causes, err = r.decodeAll(ctx, p.recs); err != nil {
		return nil // ctx ended
	}
	return p
}

// step folds one poll's records and commits them with their offsets.
func (r *Runner) step(ctx context.Context, p *polled) error {
	folded, err := r.foldCommit(ctx, p)
	if err == nil || ctx.Err() == nil { // not a step cut short by the stop
		recordStep(ctx, p.started, folded, err)
	}
	if err != nil {
		return err
	}
	r.lags.set(p.fs)
	// The store holds the truth; the group's own offsets only let Kafka
	// tools show the projector's lag. Outside the working set's lock, so
	// a rebalance callback never waits on Kafka.
	if cerr := r.client.CommitRecords(ctx, p.recs...); cerr != nil && ctx.Err() == nil {
		r.log.WarnContext(ctx, "commit offsets to the consumer group (for lag only)", "err", cerr)
	}
	return nil
}

// foldCommit folds decoded records and commits them with their offsets. It
// returns the types of the events it folded.
func (r *Runner) foldCommit(ctx context.Context, p *polled) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rejected []events.Rejected
	decoded := make([]*events.Decoded, 0, len(p.recs))
	source := make([]*kgo.Record, 0, len(p.recs))
	for i, rec := range p.recs {
		if p.all[i] == nil { // a transaction marker, or a record to dead-letter
			if p.causes[i] != nil {
				rejected = append(rejected, events.Rejected{Record: rec, Cause: p.causes[i]})
			}
			r.view.Advance(rec.Topic, rec.Partition, rec.Offset)
			continue
		}
		decoded, source = append(decoded, p.all[i]), append(source, rec)
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
		trace.WithAttributes(attribute.Int("argosy.records", len(p.recs))))
	err := r.store.Commit(cctx, r.view.Flush())
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
