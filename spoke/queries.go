package spoke

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// Inspector answers the hub's live questions about one of the cluster's
// Applications from the cluster's API (spoke/live.Source does). The
// answer is JSON; truncated says it was cut to its bound. An error that
// has a QueryCode() method names its schemas.Query* code; any other is
// QueryFailed.
type Inspector interface {
	Answer(ctx context.Context, q *schemas.QueryRequested) (answer json.RawMessage, truncated bool, err error)
}

// WithInspector makes the agent answer the hub's live questions with i.
// Without one, it answers each that it cannot (QueryInvalid).
func WithInspector(i Inspector) Option { return func(o *options) { o.inspector = i } }

// queryLife bounds how long after the hub signed a question the agent
// still answers it, whatever its expiry says: a question is wanted for
// seconds, and a copy appended later is not answered.
const queryLife = 2 * time.Minute

// answerTimeout bounds the work of one answer.
const answerTimeout = 30 * time.Second

// responder answers the questions on the cluster's partition of the
// queries topic, each once, on the answers topic.
type responder struct {
	cluster string
	inspect Inspector
	publish Publisher
	log     *slog.Logger
	inst    *instruments
	now     func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // request id -> until when it is remembered
}

// Handle answers one question. It returns an error only when the answer
// could not be published, so that the reader tries again while the
// question is wanted.
func (r *responder) Handle(ctx context.Context, d *events.Decoded) error {
	q, ok := d.Data.(*schemas.QueryRequested)
	if !ok {
		return events.Poison(fmt.Errorf("%s is not a question", d.Event.Type()))
	}
	now := r.now()
	until := earliest(q.ExpiresAt, d.Event.Time().Add(queryLife))
	if now.After(until) {
		r.log.DebugContext(ctx, "question read after its expiry: not answered", "request", q.RequestID, "expired", until)
		r.inst.queried(ctx, q.Query, "expired")
		return nil
	}
	if r.answered(q.RequestID, now) {
		r.log.DebugContext(ctx, "question answered before: not again", "request", q.RequestID)
		r.inst.queried(ctx, q.Query, "repeated")
		return nil
	}
	out := r.answer(ctx, q, until)
	e, err := events.New(Source(r.cluster), events.TypeQueryAnswered,
		events.Subject{Cluster: r.cluster, Kind: schemas.SubjectApplications, Namespace: q.Namespace, Name: q.Name}.String(), r.cluster, out)
	if err != nil {
		return events.Poison(err)
	}
	if _, err := r.publish.Publish(ctx, e); err != nil {
		return fmt.Errorf("answer %s: %w", q.RequestID, err)
	}
	r.remember(q.RequestID, until)
	r.inst.queried(ctx, q.Query, cmp.Or(out.Code, "answered"))
	return nil
}

// answer asks the inspector, within answerTimeout and until, and bounds
// the answer.
func (r *responder) answer(ctx context.Context, q *schemas.QueryRequested, until time.Time) schemas.QueryAnswered {
	out := schemas.QueryAnswered{Resource: schemas.Resource{Cluster: r.cluster, Namespace: q.Namespace, Name: q.Name},
		RequestID: q.RequestID, Query: q.Query}
	if r.inspect == nil {
		out.Code, out.Error = schemas.QueryInvalid, "this agent answers no live questions: it runs without access to its cluster's resources"
		return out
	}
	actx, cancel := context.WithDeadline(ctx, earliest(until, r.now().Add(answerTimeout)))
	defer cancel()
	ans, truncated, err := r.inspect.Answer(actx, q)
	switch {
	case err != nil:
		out.Code, out.Error = queryCode(err), err.Error()
	case len(ans) > schemas.MaxQueryAnswer:
		out.Code = schemas.QueryTooLarge
		out.Error = fmt.Sprintf("the answer is %d bytes, over the %d an answer may hold", len(ans), schemas.MaxQueryAnswer)
	default:
		out.Answer, out.Truncated = ans, truncated
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// queryCode is err's schemas.Query* code.
func queryCode(err error) string {
	var c interface{ QueryCode() string }
	if errors.As(err, &c) && c.QueryCode() != "" {
		return c.QueryCode()
	}
	return schemas.QueryFailed
}

// answered reports whether the question was answered before, and forgets
// those past their time.
func (r *responder) answered(id string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, until := range r.seen {
		if now.After(until) {
			delete(r.seen, k)
		}
	}
	_, ok := r.seen[id]
	return ok
}

func (r *responder) remember(id string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[id] = until
}

// queriesReader reads the cluster's partition of the queries topic from
// the questions appended within queryLife, the oldest any may still be
// wanted: a question asked while the agent was starting, or starting
// again, is answered if it is still wanted, and the rest are passed
// over as expired. It returns nil when the topic does not exist (a
// deployment older than live questions): the agent then answers none,
// and says so.
func (a *Agent) queriesReader(ctx context.Context, c *conn, in *events.Intake) (*events.Reader, error) {
	topic := a.o.topics[events.TopicQueries]
	td, err := kadm.NewClient(c.client).ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("queries topic: %w", err)
	}
	if t, ok := td[topic]; !ok || t.Err != nil || len(t.Partitions) == 0 {
		a.o.Log.WarnContext(ctx, "no live questions: the queries topic does not exist; create it as the hub does (events.TopicPlan)", "topic", topic)
		return nil, nil
	}
	return events.NewReader(c.client, in, topic, "", append(a.o.Events(),
		events.WithPartitions(c.partition), events.WithOffsetStore(&events.MemoryOffsets{}),
		events.WithStartOffset(kgo.NewOffset().AfterMilli(time.Now().Add(-queryLife).UnixMilli())), events.WithFetchSource(c.demux.Topic(topic)),
		events.WithSkip(func(r *kgo.Record) bool { return string(r.Key) != a.cluster }))...)
}
