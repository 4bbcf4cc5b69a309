package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
)

// Topics the projector folds.
var foldedTopics = []events.Topic{events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit}

// Runner folds the config, status, deployments and audit topics into a
// Store, exactly once. It consumes in a consumer group, so replicas share the
// partitions, but its offsets live in the store, written in the same
// transaction as the rows they produced: on assignment it starts each
// partition from the store's offset, and a crash at any point loses the
// uncommitted step as a whole, to be folded again. Each step is the
// Folder's: the same one a rebuild from the log takes.
//
// Records go through an events.Intake: those that do not decode
// (malformed, forged, unknown, …) go to the dead-letter topic with their
// reason before the step that skips them is committed, so the projector
// never stops on them; records whose keys the trust registry has not
// caught up with wait for it.
type Runner struct {
	client  *kgo.Client
	in      *events.Intake
	store   Store
	log     *slog.Logger
	inst    *instruments
	maxRecs int

	mu       sync.Mutex // guards folder and assigned between the poll loop and rebalance callbacks
	folder   *Folder
	assigned map[Partition]bool
	lags     lags // its own lock, taken after mu, so a metrics scrape never waits on a step

	// rebalanceWaiting is set when a rebalance waits for the records Run
	// holds; cancelPoll stops the poll in flight.
	rebalanceWaiting atomic.Bool
	pollMu           sync.Mutex
	cancelPoll       context.CancelFunc
}

// NewRunner returns a Runner that folds into store what it reads through
// in, with a client of its own built from conn (seed brokers, TLS, SASL).
// It takes the WithGroup, WithTopics, WithMaxRecords, WithClientOpts
// ("projector"), WithLogger, WithTracerProvider and WithMeterProvider
// options. Close its client with Close once Run has returned.
func NewRunner(conn []kgo.Opt, store Store, in *events.Intake, opts ...Option) (*Runner, error) {
	o := newOptions(opts)
	if o.group == "" {
		return nil, errors.New("projector: a consumer group is required")
	}
	if in == nil {
		return nil, errors.New("projector: an intake is required")
	}
	if o.maxRecords <= 0 {
		return nil, errors.New("projector: a step's records must be bounded by a positive number")
	}
	folder, err := NewFolder(store, opts...)
	if err != nil {
		return nil, err
	}
	r := &Runner{in: in, store: store, log: o.Log, inst: newInstruments(o.Meters), maxRecs: o.maxRecords, folder: folder,
		assigned: map[Partition]bool{}, lags: lags{by: map[Partition]int64{}}}
	var names []string
	for _, t := range foldedTopics {
		names = append(names, o.topics[t])
	}
	copts := append(append(append([]kgo.Opt{}, conn...), o.ClientOpts("projector")...),
		kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(names...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come too, so that a partition's stored
		// offset reaches its end, past the last commit marker.
		kgo.KeepControlRecords(),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		// A fetch is at most 16 MiB (franz-go's default, 50 MiB, held a
		// catching-up replica's memory at about 1 GB for decompressed
		// batches): still several polls of records.
		kgo.FetchMaxBytes(16<<20),
		kgo.AdjustFetchOffsetsFn(r.storedOffsets),
		kgo.OnPartitionsAssigned(r.assign), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget),
		kgo.OnPartitionsCallbackBlocked(r.rebalanceBlocked))
	if r.client, err = kgo.NewClient(copts...); err != nil {
		return nil, err
	}
	return r, nil
}

// Close closes the Runner's client after Run has returned, waiting at
// most d, and reports whether it closed in time. Leaving the group waits
// for a join in flight, and a join lasts until every member the
// coordinator knows has rejoined or timed out: a replica killed a moment
// ago holds it for its whole session timeout. The store has the offsets,
// so giving up on the leave loses nothing; the group drops this member
// after its session timeout. Past d, the close goes on in a goroutine of
// its own, which ends with it.
func (r *Runner) Close(d time.Duration) bool {
	closed := make(chan struct{})
	go func() {
		r.client.Close()
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
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range ps {
		r.folder.Expect(p, stored[p]) // 0 when none is stored: the start
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
	r.folder.Forget()
	for t, parts := range ps {
		for _, p := range parts {
			delete(r.assigned, Partition{t, p})
			r.folder.Unexpect(Partition{t, p})
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
	defer r.lags.observe(r.inst)()
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
				if ctx.Err() != nil {
					return nil // stopped while rewinding: the next run starts from the store
				}
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
	if p.all, p.causes, err = decodeAll(ctx, r.in, p.recs); err != nil {
		return nil // ctx ended
	}
	return p
}

// step folds one poll's records and commits them with their offsets.
func (r *Runner) step(ctx context.Context, p *polled) error {
	folded, err := r.foldCommit(ctx, p)
	if err == nil || ctx.Err() == nil { // not a step cut short by the stop
		r.inst.recordStep(ctx, p.started, folded, err)
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

// foldCommit takes one step of the Folder over a poll's records: it folds
// them, dead-letters those refused before or by the fold, and commits the
// rest with their offsets. It returns the types of the events it folded.
func (r *Runner) foldCommit(ctx context.Context, p *polled) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	folded, _, err := foldRecords(ctx, r.folder, r.in, p.recs, p.all, p.causes)
	if err != nil {
		return nil, err
	}
	if err := r.folder.Commit(ctx, len(p.recs)); err != nil {
		return nil, err
	}
	return folded.Types, nil
}

// foldRecords folds decoded records with folder: all[i] is recs[i]'s
// event, nil for a transaction marker or a record refused for causes[i]
// (decodeAll's results). Records refused before or by the fold go to in's
// Refuse in one batch, durable before it returns, so before the caller
// commits the step that skips them. It returns what the fold did and how
// many records were refused, before the fold or by it.
func foldRecords(ctx context.Context, folder *Folder, in *events.Intake, recs []*kgo.Record, all []*events.Decoded, causes []error) (Folded, int, error) {
	var step Step
	var refused []events.Rejected
	source := make([]*kgo.Record, 0, len(recs))
	for i, rec := range recs {
		if all[i] == nil { // a transaction marker, or a record to dead-letter
			if causes[i] != nil {
				refused = append(refused, events.Rejected{Record: rec, Cause: causes[i]})
			}
			step.Passed = append(step.Passed, Position{rec.Topic, rec.Partition, rec.Offset})
			continue
		}
		step.Events, source = append(step.Events, all[i]), append(source, rec)
	}
	folded, err := folder.Fold(ctx, step)
	if err != nil {
		return Folded{}, 0, err
	}
	for _, f := range folded.Refused {
		refused = append(refused, events.Rejected{Record: source[f.Index], Cause: f.Err})
	}
	if err := in.Refuse(ctx, refused...); err != nil {
		return Folded{}, 0, err
	}
	return folded, len(refused), nil
}

// decodeAll takes recs through in on every core: verification is most of
// the cost of a step. A record that does not decode has a nil event and
// its cause; a transaction marker has neither. The error is only ctx's.
func decodeAll(ctx context.Context, in *events.Intake, recs []*kgo.Record) ([]*events.Decoded, []error, error) {
	all := make([]*events.Decoded, len(recs))
	causes := make([]error, len(recs))
	// One worker per core takes the next record: a goroutine per record
	// would grow a fresh stack for each.
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range min(runtime.GOMAXPROCS(0), len(recs)) {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < len(recs); i = int(next.Add(1) - 1) {
				d, err := in.Take(gctx, recs[i])
				switch {
				case err == nil:
					all[i] = d
				case events.IsPoison(err):
					causes[i] = err
				default:
					return err
				}
			}
			return nil
		})
	}
	return all, causes, g.Wait()
}

// rewind drops the working set and seeks every assigned partition back to
// the store's offsets, after a step that was not committed.
func (r *Runner) rewind(ctx context.Context) error {
	r.mu.Lock()
	r.folder.Forget()
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
	r.mu.Lock()
	for _, p := range ps {
		at := stored[p] // 0 when none is stored: the start
		r.folder.Expect(p, at)
		if set[p.Topic] == nil {
			set[p.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: -1, Offset: at}
	}
	r.mu.Unlock()
	r.client.SetOffsets(set)
	return nil
}
