package spoke

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// Store is where an agent keeps what must survive its restarts: the
// Applied record of each object and its deployment marks. spoke/kube's
// State is one, in a ConfigMap per key; it is also a Pruner.
type Store interface {
	StateStore
	MarkStore
}

// Agent is the agent of one workload cluster: it follows the trust topic
// for the hub's keys, bootstraps from the desired-state topic, reads its
// cluster's config partition and applies each event to the local Argo CD,
// and publishes acknowledgements, status deltas, deployment records, drift
// reports and heartbeats. Everything it needs comes in through New, so
// many Agents run side by side in one process (a simulated fleet), each
// with its own client, state and telemetry, and nothing global.
type Agent struct {
	cluster string
	keys    Keys
	hub     ed25519.PublicKey
	conn    []kgo.Opt
	argo    ArgoCD
	status  StatusSource
	store   Store
	o       options
	opts    []Option
	// kafka is Run's client while it runs, for Ready.
	kafka atomic.Pointer[kgo.Client]
}

// ErrNotRunning is Ready's answer when Run is not running: before it
// starts, after it returned, and while a standby waits for the Lease.
var ErrNotRunning = errors.New("spoke: not running")

// Ready reports whether the agent can take its cluster's changes now: Run
// is running and a Kafka broker answers. Without Kafka it goes on
// reporting and applying what it has (status waits in the producer), but
// it is not ready. The metrics endpoint's /readyz serves it.
func (a *Agent) Ready(ctx context.Context) error {
	c := a.kafka.Load()
	if c == nil {
		return ErrNotRunning
	}
	if err := c.Ping(ctx); err != nil {
		return fmt.Errorf("spoke: kafka: %w", err)
	}
	return nil
}

// New returns the agent of cluster. It signs with keys' signing key and
// opens credentials sealed to keys' sealing key; it trusts the trust
// events hubKey signs, and through them the hub's keys, as they are
// registered and rotated; it connects to Kafka with conn (seed brokers,
// TLS, SASL); it applies to argo, hears of the local Applications from
// status and keeps its state in store. It takes every Option; in managed
// mode (the default) argo must also be a Reverter.
func New(cluster string, keys Keys, hubKey ed25519.PublicKey, conn []kgo.Opt, argo ArgoCD, status StatusSource, store Store,
	opts ...Option) (*Agent, error) {
	o := newOptions(opts)
	var errs []error
	if cluster == "" {
		errs = append(errs, errors.New("a cluster name is required"))
	}
	if len(keys.Signing) != ed25519.PrivateKeySize {
		errs = append(errs, errors.New("the cluster's signing key is required"))
	}
	if len(hubKey) != ed25519.PublicKeySize {
		errs = append(errs, errors.New("the hub's public key is required"))
	}
	if len(conn) == 0 {
		errs = append(errs, errors.New("kafka connection options are required"))
	}
	if argo == nil || status == nil || store == nil {
		errs = append(errs, errors.New("an Argo CD, a status source and a store are required"))
	}
	if _, ok := argo.(Reverter); o.mode == ModeManaged && argo != nil && !ok {
		errs = append(errs, errors.New("managed mode reverts local edits: the Argo CD must be a Reverter"))
	}
	if err := ValidMode(o.mode); err != nil {
		errs = append(errs, err)
	}
	if o.partition < -1 {
		errs = append(errs, errors.New("the partition must be -1 (computed) or a partition number"))
	}
	if o.heartbeat <= 0 || o.window <= 0 || o.applyBudget <= 0 || o.statusResync <= 0 || o.operationAge <= 0 || o.configAge <= 0 || o.skew < 0 {
		errs = append(errs, errors.New("the heartbeat interval, the window, the apply budget, the status resync and the operations' and config events' ages must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("spoke: %w", err)
	}
	return &Agent{cluster: cluster, keys: keys, hub: hubKey, conn: conn, argo: argo, status: status, store: store, o: o, opts: opts}, nil
}

// Group is the consumer group where an agent of cluster of an older
// version committed its config offsets, unless WithGroup names another:
// events.SpokeGroup with no topic prefix. An agent now keeps its offset in
// its state (ConfigOffsetKey); it reads the group's offset once, when its
// state holds none, and never writes the group.
func Group(cluster string) string { return events.SpokeGroup("", cluster) }

// Run runs the agent until ctx ends, then stops every part and returns
// nil once all of them have stopped; or it returns the first error a part
// could not recover from. It checks first that Kafka takes the
// connection's credentials.
func (a *Agent) Run(ctx context.Context) error {
	c, err := a.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while connecting
		}
		return err
	}
	defer c.close()
	a.kafka.Store(c.client)
	defer a.kafka.Store(nil)
	if err := a.checkPartitions(ctx, c.partitions); err != nil {
		return err
	}
	p, err := a.assemble(c)
	if err != nil {
		return err
	}
	a.o.Log.InfoContext(ctx, "agent started", "cluster", a.cluster, "mode", a.o.mode, "partition", c.partition)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.follower.Run(gctx) })
	g.Go(func() error { return p.heart.Run(gctx) })
	g.Go(func() error {
		if _, err := p.boot.Run(gctx); err != nil {
			if gctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bootstrap: %w", err)
		}
		return p.reader.Run(gctx, p.handle)
	})
	g.Go(func() error { return p.recorder.Run(gctx) })
	g.Go(func() error { return p.guard.Run(gctx) })
	g.Go(func() error { return a.prune(gctx, p) })
	if p.operator != nil {
		g.Go(func() error { return p.operator.Run(gctx) })
	}
	g.Go(func() error { return a.answer(gctx, c, p) })
	g.Go(func() error { return p.reporter.Run(gctx, Tee(a.status, p.recorder.Observe, p.guard.Observe)) })
	return g.Wait()
}

// conn is an agent's Kafka client, closed when Run returns: the producer,
// the config reader and the trust follower share it, and the readers
// take their fetches through its demux, so that the agent holds one
// client's connections to each broker (one each for produce requests,
// fetches and the rest).
type conn struct {
	client     *kgo.Client
	demux      *events.Demux
	partition  int32
	partitions int32 // of the config topic
}

func (c *conn) close() {
	if c.client != nil {
		c.client.Close()
	}
}

// connect makes the client, checks that Kafka takes the credentials
// (franz-go retries refused ones quietly, so a ping says why at once) and
// finds the config partition.
func (a *Agent) connect(ctx context.Context) (_ *conn, err error) {
	c := &conn{} // not the result, which is nil on an error
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	opts := slices.Concat(events.ProducerOpts(nil), events.ReaderOpts(), events.TrustConsumeOpts(a.o.topics),
		// A fetch in flight holds back a partition the reader adds or
		// resumes until it returns: the trust partition's must not wait
		// at the broker for the trust follower's 5 s.
		[]kgo.Opt{kgo.FetchMaxWait(fetchMaxWait)})
	if c.client, err = kgo.NewClient(slices.Concat(opts, a.conn, a.o.ClientOpts("agent"))...); err != nil {
		return nil, err
	}
	c.demux = events.NewDemux(c.client)
	pingCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.client.Ping(pingCtx); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if c.partition, c.partitions, err = a.configPartition(ctx, c.client); err != nil {
		return nil, err
	}
	return c, nil
}

// fetchMaxWait is the longest a fetch of the agent's client waits at the
// broker for records: the longest a partition its reader adds, or
// resumes after pausing it, waits to be fetched, and an idle agent's one
// fetch request each time.
const fetchMaxWait = time.Second

// parts are an agent's components, made afresh by each Run.
type parts struct {
	follower *events.TrustFollower
	boot     *Bootstrap
	reader   *events.Reader
	handle   events.Handler
	reporter *Reporter
	recorder *Recorder
	guard    *Guard
	heart    *Heartbeater
	// operator runs the syncs and rollbacks the applier queues; nil when
	// the Argo CD runs none of its own (an operation is then performed
	// when it is read).
	operator *Operator
	// committed is the config partition's committed offset, -1 before
	// the first commit of this Run; offsets keeps it.
	committed *atomic.Int64
	offsets   *offsets
	// read is the log time (Unix nanoseconds) of the last config record
	// handled, and progress the committed offset and the records after it.
	read     *atomic.Int64
	progress func(context.Context) (int64, int64, error)
	// in is the intake of hub-signed records, and responder answers the
	// live questions read through it.
	in        *events.Intake
	responder *responder
}

func (a *Agent) assemble(c *conn) (*parts, error) {
	evOpts := a.o.Events()
	producer, in, follower, err := a.logIO(c)
	if err != nil {
		return nil, err
	}
	p := &parts{follower: follower, committed: &atomic.Int64{}, read: &atomic.Int64{}, in: in,
		responder: &responder{cluster: a.cluster, inspect: a.o.inspector, publish: producer, log: a.o.Log, inst: newInstruments(a.o.Meters),
			now: time.Now, seen: map[string]time.Time{}}}
	p.committed.Store(-1)
	applier, err := newApplier(a.cluster, a.argo, a.store, producer, a.keys.Sealing, a.opts...)
	if err != nil {
		return nil, err
	}
	p.handle = applier.Handle
	if applier.ops != nil {
		if p.operator, err = applier.operator(); err != nil {
			return nil, err
		}
	}
	p.handle = func(ctx context.Context, d *events.Decoded) error {
		err := applier.Handle(ctx, d)
		if err == nil || events.IsPoison(err) {
			p.read.Store(d.LogTime.UnixNano())
		}
		if f := a.o.applied; f != nil && err == nil {
			f(ctx, d)
		}
		return err
	}
	group := a.o.group
	if group == "" {
		group = Group(a.cluster)
	}
	config := a.o.topics[events.TopicConfig]
	p.offsets = newOffsets(a.store, kadm.NewClient(c.client), group, config, c.partition)
	if p.boot, err = newBootstrap(a.cluster, c.client, a.conn, c.partition, group, in, a.store, applier.Handle, a.opts...); err != nil {
		return nil, err
	}
	if p.reporter, err = newReporter(a.cluster, producer, a.opts...); err != nil {
		return nil, err
	}
	if p.recorder, err = newRecorder(a.cluster, producer, a.store, a.opts...); err != nil {
		return nil, err
	}
	revert, _ := a.argo.(Reverter)
	if p.guard, err = newGuard(a.cluster, revert, a.store, producer, a.opts...); err != nil {
		return nil, err
	}
	p.progress = progress(c.client, p.offsets, config, c.partition)
	if p.heart, err = newHeartbeater(a.cluster, producer, p.reporter.Counts, p.progress, a.opts...); err != nil {
		return nil, err
	}
	p.reader, err = events.NewReader(c.client, in, config, "", append(evOpts,
		events.WithPartitions(c.partition), events.WithOffsetStore(p.offsets), events.WithFetchSource(c.demux.Topic(config)),
		events.WithSkip(func(r *kgo.Record) bool { return string(r.Key) != a.cluster }),
		// Its offset is a write to its state: the other clusters'
		// records on its partition move it only every quietCommit.
		events.WithQuietCommitInterval(quietCommit),
		events.OnDataLoss(a.recover(p.boot, producer)),
		events.OnRefused(applier.Refused),
		events.OnCommit(func(_ int32, next int64) { p.committed.Store(next) }))...)
	return p, err
}

// answer answers the live questions on the cluster's partition of the
// queries topic until ctx ends; with no queries topic, none.
func (a *Agent) answer(ctx context.Context, c *conn, p *parts) error {
	rd, err := a.queriesReader(ctx, c, p.in)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	case rd == nil:
		<-ctx.Done()
		return nil
	}
	return rd.Run(ctx, p.responder.Handle)
}

// logIO makes the agent's way in and out of the log: a producer that signs
// with the cluster's key; an intake for config records whose keys come
// from the trust topic, dead-lettering what it refuses; and the follower
// of the trust topic that feeds those keys, anchored at the hub's key.
func (a *Agent) logIO(c *conn) (*events.Producer, *events.Intake, *events.TrustFollower, error) {
	evOpts := a.o.Events()
	signer, err := events.NewSigner(a.keys.Signing)
	if err != nil {
		return nil, nil, nil, err
	}
	anchor := events.HubAnchor(hubOwner, a.hub)
	keys := events.NewFollowingRegistry(anchor)
	// What the agent signs names how far it had read the trust topic, so
	// that the projector judges it without waiting out the clock margin.
	producer, err := events.NewProducer(c.client, signer.WithTrustOffset(keys.TrustRead), a.o.topics, evOpts...)
	if err != nil {
		return nil, nil, nil, err
	}
	dec, err := events.NewDecoder(events.NewVerifier(keys), append([]events.Option{events.WithTarget(a.cluster), events.WithTopics(a.o.topics),
		events.WithStaleness(a.o.configAge, a.o.skew)}, a.o.DecoderOpts...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	dlq, err := events.NewDeadLetter(c.client, a.o.topics[events.TopicDeadLetter], evOpts...)
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := events.NewIntake(dec, dlq, evOpts...)
	if err != nil {
		return nil, nil, nil, err
	}
	trustDec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), append([]events.Option{events.WithTopics(a.o.topics)}, a.o.DecoderOpts...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	// The projector dead-letters a bad trust event, not each of
	// thousands of agents.
	trustIn, err := events.NewIntake(trustDec, nil, evOpts...)
	if err != nil {
		return nil, nil, nil, err
	}
	// Only the hub's trust events: the agent verifies nothing else, and
	// a fleet's other clusters' keys and reports would cost every agent
	// time and memory in proportion to the fleet.
	trust := a.o.topics[events.TopicTrust]
	follower, err := events.NewTrustFollower(c.client, trust, trustIn, keys,
		append(evOpts, events.WithTrustOwners(hubOwner), events.WithFetchSource(c.demux.Topic(trust)))...)
	if err != nil {
		return nil, nil, nil, err
	}
	return producer, in, follower, nil
}

// quietCommit is the least time between two writes of the agent's config
// offset to its state while only other clusters' records (and transaction
// markers) pass: a busy fleet shares each partition among many clusters,
// and each write is a request to the cluster's API server. A crash reads
// those records again, and passes over them again.
const quietCommit = 10 * time.Second

// hubOwner is the owner, and so the record key, of the hub's trust
// events (the hub's HubKeyOwner).
const hubOwner = "hub"

// prune keeps the state bounded when the store is a Pruner: every half
// of the operations' maximum age, it forgets the records of operations
// and deleted objects whose time is up (Applied.Until) and that are below
// the config partition's committed offset. No redelivery brings their
// events back; a copy of an operation's event appended later has expired;
// a copy of any event of a deleted object, or of an older one, is older
// than the decoder accepts. So forgetting them neither repeats an
// operation nor lets an older generation in (docs/design.md, Replays).
// Time is up by the log, not only by the clock (readTo): a copy appended
// in time and still unread while the reader lags must find the record.
// Records applied by the bootstrap carry the config offset of the event
// they copy, so the same rule holds for them. Open operations are never
// forgotten.
func (a *Agent) prune(ctx context.Context, p *parts) error {
	pruner, ok := a.store.(Pruner)
	if !ok {
		return nil
	}
	inst := newInstruments(a.o.Meters)
	t := time.NewTicker(max(a.o.operationAge/2, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		below := p.committed.Load()
		if below < 0 {
			continue
		}
		at := readTo(ctx, p)
		n, err := pruner.Prune(ctx, func(_ string, r Applied) bool { return r.Offset < below && Forgettable(r, at) })
		if n > 0 {
			inst.pruned.Add(ctx, int64(n))
			a.o.Log.DebugContext(ctx, "state pruned", "records", n, "below", below)
		}
		if err != nil && ctx.Err() == nil {
			a.o.Log.WarnContext(ctx, "prune the state; will retry", "err", err)
		}
	}
}

// readTo is the time up to which the agent has read every record of its
// config partition: now when the reader is at the partition's end, or
// else the log time of the last record it handled (the records of a
// partition are in log-time order).
func readTo(ctx context.Context, p *parts) time.Time {
	now := time.Now()
	if _, behind, err := p.progress(ctx); err == nil && behind == 0 {
		return now
	}
	return time.Unix(0, p.read.Load())
}

// Forgettable reports whether the Transient record r may be forgotten at
// now, as far as its time goes (the agent also keeps every record at or
// above its committed config offset): its Until has passed, and it is not
// an open operation. A record written before records carried Until is
// kept for events.DefaultMaxAge and events.DefaultMaxSkew after it was
// written, the longest any record must be kept by default.
func Forgettable(r Applied, now time.Time) bool {
	if r.Phase == OperationQueued || r.Phase == OperationStarted {
		return false
	}
	until := r.Until
	if until.IsZero() {
		until = r.At.Add(events.DefaultMaxAge + events.DefaultMaxSkew)
	}
	return now.After(until)
}

// recover returns the data-loss handler: config records were deleted
// before the agent applied them. It applies their effect from the
// desired-state topic (Bootstrap.Recover), and publishes
// resync.requested either way, so that the loss is on the record; the
// hub, once it consumes that request, re-appends the cluster's desired
// state for a loss the desired-state topic cannot repair (it is missing,
// or does not match the config topic).
func (a *Agent) recover(boot *Bootstrap, p *events.Producer) func(context.Context, *kgo.ErrDataLoss) {
	return func(ctx context.Context, l *kgo.ErrDataLoss) {
		a.o.Log.ErrorContext(ctx, "config records lost before they were applied; recovering from the desired-state topic",
			"from", l.ConsumedTo, "to", l.ResetTo)
		if _, err := boot.Recover(ctx, l.ConsumedTo, l.ResetTo); err != nil && ctx.Err() == nil {
			a.o.Log.ErrorContext(ctx, "recovery from the desired-state topic failed; the resync request is the way back", "err", err)
		}
		e, err := events.New(Source(a.cluster), events.TypeResyncRequested, events.Subject{Cluster: a.cluster}.String(), a.cluster,
			schemas.ResyncRequested{Cluster: a.cluster, Reason: schemas.ResyncDataLoss, LastOffset: l.ConsumedTo - 1, FirstAvailable: l.ResetTo})
		if err == nil {
			_, err = p.Publish(ctx, e)
		}
		if err != nil {
			a.o.Log.ErrorContext(ctx, "resync request not sent", "err", err)
		}
	}
}

// configPartition is the pinned partition, or the cluster's partition by
// the Kafka-compatible partitioner, and the config topic's partition count.
// A topic the broker does not know yet (it was just created, or Kafka is
// still starting) is waited for, up to a minute.
func (a *Agent) configPartition(ctx context.Context, cl *kgo.Client) (partition, partitions int32, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		partitions, err = a.partitionCount(ctx, cl)
		if err == nil {
			if a.o.partition >= partitions {
				return 0, 0, fmt.Errorf("pinned partition %d: the config topic has %d", a.o.partition, partitions)
			}
			if a.o.partition >= 0 {
				return a.o.partition, partitions, nil
			}
			return events.NewPartitioner(nil).PartitionOf(a.cluster, partitions), partitions, nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return 0, 0, err
		}
		select {
		case <-ctx.Done():
			return 0, 0, err
		case <-time.After(wait):
		}
	}
}

func (a *Agent) partitionCount(ctx context.Context, cl *kgo.Client) (int32, error) {
	topic := a.o.topics[events.TopicConfig]
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("config topic: %w", err)
	}
	t, ok := td[topic]
	if !ok || len(t.Partitions) == 0 {
		t.Err = errors.Join(t.Err, kerr.UnknownTopicOrPartition)
	}
	if t.Err != nil {
		return 0, fmt.Errorf("config topic %s: %w", topic, t.Err)
	}
	return int32(len(t.Partitions)), nil
}

// ErrPartitionsChanged means the config topic's partition count is not the
// one the agent first ran with: partitions were added, so clusters map to
// other partitions than the ones their history is on. See docs/kafka.md,
// "Growing the config topic".
var ErrPartitionsChanged = errors.New("the config topic's partition count changed")

// partitionsKey is the state key of the config topic's partition count as
// the agent first ran with it.
const partitionsKey = "partitions"

// checkPartitions holds the config topic to the partition count it had
// when the agent first ran, recorded in the agent's state then.
func (a *Agent) checkPartitions(ctx context.Context, partitions int32) error {
	rec, ok, err := a.store.Get(ctx, partitionsKey)
	if err != nil {
		return err
	}
	if !ok {
		return a.store.Put(ctx, partitionsKey, Applied{Partitions: partitions, At: time.Now().UTC()})
	}
	if rec.Partitions != partitions {
		return fmt.Errorf("%w: %s has %d partitions, but this agent first ran with %d (recorded %s): cluster %s's events may now "+
			"be on another partition than its history. A config topic is not grown in place; create topics with the new count "+
			"under a new prefix and re-drive every cluster onto them (docs/kafka.md)", ErrPartitionsChanged,
			a.o.topics[events.TopicConfig], partitions, rec.Partitions, rec.At.Format(time.RFC3339), a.cluster)
	}
	return nil
}

// progress reports the agent's committed config offset, as its state
// keeps it, and the records after it, up to the partition's last stable
// offset: the end a read_committed reader can reach, markers included.
// It lists that end for the agent's partition alone, at its leader: each
// heartbeat lists it, and a listing of the whole topic would hold a
// connection open from every agent to every broker.
func progress(cl *kgo.Client, offs *offsets, topic string, part int32) func(context.Context) (int64, int64, error) {
	return func(ctx context.Context) (int64, int64, error) {
		next, _, err := offs.stored(ctx)
		if err != nil {
			return 0, 0, err
		}
		end, err := events.ListOffset(ctx, cl, topic, part, events.ListEnd, true)
		if err != nil {
			return 0, 0, err
		}
		return next, max(0, end-next), nil
	}
}
