package spoke

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

const instrumentation = "github.com/argosyproj/argosy/spoke"

// Option configures an Agent or one of its parts. Each takes the options
// that concern it and ignores the rest.
type Option func(*options)

type options struct {
	events.Common
	topics        events.Topics
	partition     int32
	mode          string
	heartbeat     time.Duration
	window        time.Duration
	agentVersion  string
	argoCDVersion string
	applied       func(ctx context.Context, d *events.Decoded)
	applyBudget   time.Duration
	statusResync  time.Duration
	operationAge  time.Duration
	configAge     time.Duration
	skew          time.Duration
	group         string
	inspector     Inspector
}

func newOptions(opts []Option) options {
	o := options{topics: events.DefaultTopics(""), partition: -1, mode: schemas.ModeManaged, heartbeat: 30 * time.Second,
		window: time.Second, agentVersion: "dev", applyBudget: 2 * time.Minute,
		statusResync: time.Hour, operationAge: events.OperationMaxAge, configAge: events.DefaultMaxAge, skew: events.DefaultMaxSkew}
	for _, f := range opts {
		f(&o)
	}
	o.SetDefaults()
	return o
}

// WithClockMargin sets how far the agent assumes the brokers' clocks may be
// behind its own (events.Common.ClockMargin; default 2 s). A config event is
// applied about this long after its append, once the agent has read the
// trust topic past its log time (docs/design.md#trust): a smaller margin
// is a faster fan-out, correct only while the clocks keep within it.
func WithClockMargin(d time.Duration) Option { return func(o *options) { o.ClockMargin = d } }

// WithSigForm sets the form the agent signs its events in
// (events.Common.SigForm): events.SigDSSE while some readers are older
// than the compact form.
func WithSigForm(f events.SigForm) Option { return func(o *options) { o.SigForm = f } }

// WithLogger logs to l; the default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.Log = l } }

// WithTracerProvider starts spans with tp rather than the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.Tracers = tp } }

// WithMeterProvider records metrics with mp rather than the global
// provider. Agents that share a process each get their own, or share one
// whose exporter labels them.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.Meters = mp } }

// WithTopics names the topics; the default is events.DefaultTopics("").
func WithTopics(t events.Topics) Option { return func(o *options) { o.topics = t } }

// WithGroup names the group where an agent of an older version stored its
// config offsets; the default is Group(cluster). The agent keeps its
// offset in its state (ConfigOffsetKey) and reads the group's once, when
// its state holds none; it never writes the group. An install with a topic
// prefix gives its agents events.SpokeGroup(prefix, cluster), which its
// KafkaUsers' ACLs grant.
func WithGroup(group string) Option { return func(o *options) { o.group = group } }

// WithPartition pins the cluster's config partition; the default, -1,
// computes it from the cluster's name as the hub's partitioner does.
func WithPartition(p int32) Option { return func(o *options) { o.partition = p } }

// WithMode sets the agent's mode, schemas.ModeManaged (the default) or
// schemas.ModeAutonomous; see docs/spoke.md.
func WithMode(mode string) Option { return func(o *options) { o.mode = mode } }

// WithHeartbeatInterval sets the time between heartbeats; the default is
// 30 s.
func WithHeartbeatInterval(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithWindow sets how often the status reporter, the deployment recorder
// and the guard do their pending work; changes within it are coalesced.
// The default is one second.
func WithWindow(d time.Duration) Option { return func(o *options) { o.window = d } }

// WithAgentVersion is the agent's version, reported in heartbeats.
func WithAgentVersion(v string) Option { return func(o *options) { o.agentVersion = v } }

// WithArgoCDVersion is the local Argo CD's version, reported in heartbeats.
func WithArgoCDVersion(v string) Option { return func(o *options) { o.argoCDVersion = v } }

// WithClientOpts adds options to the Kafka client the agent makes, by the
// client's name ("agent": its producer, config reader and trust follower
// share one client): telemetry hooks, say.
// The short-lived clients of a bootstrap get none.
func WithClientOpts(f func(name string) []kgo.Opt) Option {
	return func(o *options) { o.ClientOpts = f }
}

// WithDecoderOptions adds options to every decoder the agent builds. Only a
// broker that cannot stamp records with its LogAppendTime calls for one:
// argosy dev's embedded broker, with events.AcceptCreateTime (it sets
// each batch's time itself as it takes it; docs/dev.md).
func WithDecoderOptions(opts ...events.Option) Option {
	return func(o *options) { o.DecoderOpts = append(o.DecoderOpts, opts...) }
}

// WithApplyBudget bounds how long the agent retries one config event whose
// apply fails in a way that may pass (the API server busy or timing out, a
// conflicting write); after it, the event is rejected as apply_failed and
// the partition goes on. The default is two minutes. An event the API
// server refuses outright is rejected at once, and none is rejected while
// the agent cannot read its own state either.
func WithApplyBudget(d time.Duration) Option { return func(o *options) { o.applyBudget = d } }

// WithOperationMaxAge bounds how long after it was asked for an operation
// may still start: a sync or rollback that Argo CD has not taken by then,
// or whose event reached the log later, is rejected as stale, and so is
// one past its own expiry (OperationRequested.ExpiresAt, which the hub
// sets) if that comes first. The default is ten minutes. The agent
// remembers every operation until after it expires, so that no copy of
// its event runs it again (docs/design.md, Replays).
func WithOperationMaxAge(d time.Duration) Option { return func(o *options) { o.operationAge = d } }

// WithStaleness sets how long after its signing a config event may reach
// the log and still be applied, and how far ahead of the log's clock its
// signer's may be (events.WithStaleness; defaults events.DefaultMaxAge,
// seven days, and events.DefaultMaxSkew). The agent remembers a deleted
// object for maxAge and maxSkew after its deletion was signed, and an
// operation for maxSkew after it expired, so that no copy of their events
// is applied again (docs/design.md, Replays).
func WithStaleness(maxAge, maxSkew time.Duration) Option {
	return func(o *options) { o.configAge, o.skew = maxAge, maxSkew }
}

// WithStatusResync sets how often the agent publishes each Application's
// whole status again, besides the deltas of what changed, so that the
// status topic always holds it, however long ago it last changed: a
// projector rebuilt from the topic then sees every Application's current
// status. The default is one hour, far inside the status topic's 7 days.
func WithStatusResync(d time.Duration) Option { return func(o *options) { o.statusResync = d } }

// WithApplied calls f after each config event the config reader handled
// was applied (or found applied before) and acknowledged, or, for a sync
// or rollback, queued for the Operator, before its offset is committed.
func WithApplied(f func(ctx context.Context, d *events.Decoded)) Option {
	return func(o *options) { o.applied = f }
}
