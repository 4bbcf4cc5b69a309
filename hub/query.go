package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/schemas"
)

// Live questions: the hub asks a cluster's agent over the queries topic
// and hands the answer, read from the answers topic, to the call that
// asked (docs/design.md, "Live questions").
const (
	// DefaultQueryTimeout is how long a call waits for its answer unless
	// it asks for less or more (?timeout=, at most MaxQueryTimeout).
	DefaultQueryTimeout = 10 * time.Second
	MaxQueryTimeout     = 30 * time.Second
)

// querier sends the hub's questions and waits for their answers. Every
// hub replica reads every answer, from where the answers topic ended
// when it started, and keeps those some call of its own waits for.
type querier struct {
	signer *events.Signer
	// out writes the questions, each to the partition given (the
	// cluster's config partition, its pin included); client reads the
	// answers.
	out    *kgo.Client
	in     *events.Intake
	client *kgo.Client
	topic  string
	log    *slog.Logger

	queries string

	mu      sync.Mutex
	waiting map[string]waiter // by request id
	ready   chan struct{}     // closed once the answers are read from their end
	off     error             // why there are no live questions here, if so
}

// waiter is one call waiting for its answer from cluster.
type waiter struct {
	cluster string
	answer  chan *schemas.QueryAnswered
}

// newQuerier makes the hub's querier: out writes the questions it signs
// with signer, and client reads the answers through in.
func newQuerier(signer *events.Signer, out, client *kgo.Client, in *events.Intake, topics events.Topics, log *slog.Logger) *querier {
	return &querier{signer: signer, out: out, in: in, client: client, topic: topics[events.TopicAnswers], log: log,
		waiting: map[string]waiter{}, ready: make(chan struct{}), queries: topics[events.TopicQueries]}
}

// run reads the answers until ctx ends. With no answers topic, it
// records why and answers every question with that.
func (q *querier) run(ctx context.Context) error {
	ends, err := kadm.NewClient(q.client).ListEndOffsets(ctx, q.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil || len(ends[q.topic]) == 0 {
		if ctx.Err() != nil {
			return nil
		}
		q.off = fmt.Errorf("the hub reads no answers from %s (create the topic as events.TopicPlan says): %w", q.topic,
			errors.Join(err, errors.New("no partitions")))
		q.log.WarnContext(ctx, "no live questions", "err", q.off)
		close(q.ready)
		<-ctx.Done()
		return nil
	}
	at := map[string]map[int32]kgo.Offset{q.topic: {}}
	ends.Each(func(o kadm.ListedOffset) { at[q.topic][o.Partition] = kgo.NewOffset().At(o.Offset) })
	q.client.AddConsumePartitions(at)
	close(q.ready)
	for {
		fs := q.client.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		fs.EachError(func(t string, p int32, err error) {
			q.log.WarnContext(ctx, "reading answers", "topic", t, "partition", p, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) { q.take(ctx, r) })
	}
}

// take hands an answer to the call waiting for it, if it is this
// replica's and comes from the cluster asked.
func (q *querier) take(ctx context.Context, r *kgo.Record) {
	d, err := q.in.Take(ctx, r)
	if err != nil || d == nil {
		if err != nil && ctx.Err() == nil {
			q.log.WarnContext(ctx, "answer refused", "partition", r.Partition, "offset", r.Offset, "err", err)
		}
		return
	}
	a, ok := d.Data.(*schemas.QueryAnswered)
	if !ok {
		return
	}
	q.mu.Lock()
	w, ok := q.waiting[a.RequestID]
	if ok && w.cluster == d.Subject.Cluster && a.Cluster == d.Subject.Cluster {
		delete(q.waiting, a.RequestID)
	} else {
		ok = false
	}
	q.mu.Unlock()
	if ok {
		w.answer <- a
	}
}

// ask sends req to its cluster, on partition, and waits for the answer
// until ctx ends.
func (q *querier) ask(ctx context.Context, req schemas.QueryRequested, partition int32) (*schemas.QueryAnswered, error) {
	select {
	case <-q.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if q.off != nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, body: api.Error{Error: q.off.Error()}}
	}
	w := waiter{cluster: req.Cluster, answer: make(chan *schemas.QueryAnswered, 1)}
	q.mu.Lock()
	q.waiting[req.RequestID] = w
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.waiting, req.RequestID)
		q.mu.Unlock()
	}()
	subj := events.Subject{Cluster: req.Cluster, Kind: schemas.SubjectApplications, Namespace: req.Namespace, Name: req.Name}
	if err := q.send(ctx, subj, req, partition); err != nil {
		return nil, fmt.Errorf("ask %s: %w", req.Cluster, err)
	}
	select {
	case a := <-w.answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send signs req and appends it to partition of the queries topic.
func (q *querier) send(ctx context.Context, subj events.Subject, req schemas.QueryRequested, partition int32) error {
	e, err := newEvent(events.TypeQueryRequested, subj, req)
	if err != nil {
		return err
	}
	if err := q.signer.Sign(ctx, e); err != nil {
		return err
	}
	rec, err := events.EventRecord(ctx, e)
	if err != nil {
		return err
	}
	rec.Topic, rec.Partition = q.queries, partition
	return q.out.ProduceSync(ctx, rec).FirstErr()
}

// queryTimeout is the call's ?timeout, in whole seconds, by default
// DefaultQueryTimeout.
func queryTimeout(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("timeout")
	if v == "" {
		return DefaultQueryTimeout, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || time.Duration(n)*time.Second > MaxQueryTimeout {
		return 0, invalid("timeout", fmt.Sprintf("%q: want whole seconds, 1 to %d", clip(v, maxEchoedValue), int(MaxQueryTimeout/time.Second)))
	}
	return time.Duration(n) * time.Second, nil
}

// actionOf is the action a query needs: logs may hold what a manifest's
// masking hides, so they need a deployer.
func actionOf(query string) string {
	if query == schemas.QueryLogs {
		return auth.ActionLogs
	}
	return auth.ActionInspect
}

// newRequestID names one question.
func newRequestID() string { return uuid.NewString() }
