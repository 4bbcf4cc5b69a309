//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// fakeInspector answers every question with what answer says, and counts
// the questions it was asked.
type fakeInspector struct {
	mu     sync.Mutex
	asked  map[string]int // by request id
	answer func(q *schemas.QueryRequested) (json.RawMessage, bool, error)
}

func (f *fakeInspector) Answer(_ context.Context, q *schemas.QueryRequested) (json.RawMessage, bool, error) {
	f.mu.Lock()
	f.asked[q.RequestID]++
	f.mu.Unlock()
	return f.answer(q)
}

// codedErr is an inspector's refusal with its code.
type codedErr struct{ code string }

func (e codedErr) Error() string     { return "refused: " + e.code }
func (e codedErr) QueryCode() string { return e.code }

// TestAgentAnswersEachQuestionOnce asks an agent live questions on the
// real broker, as the hub and as an attacker with produce access would:
// one asked while the agent was starting is answered, once, even when its
// record is appended again; one read after its expiry, or signed for another cluster, is
// answered by nobody (the latter dead-lettered); the inspector's refusal
// code and the bound of an answer reach the answer.
func TestAgentAnswersEachQuestionOnce(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	insp := &fakeInspector{asked: map[string]int{}, answer: func(q *schemas.QueryRequested) (json.RawMessage, bool, error) {
		switch q.Name {
		case "hidden":
			return nil, false, codedErr{schemas.QueryNotInTree}
		case "huge":
			return json.RawMessage(`"` + strings.Repeat("x", schemas.MaxQueryAnswer) + `"`), false, nil
		case "broken":
			return nil, false, errors.New("the apiserver is down")
		}
		return json.RawMessage(`{"nodes":[{"kind":"ConfigMap","name":"` + q.Name + `"}]}`), false, nil
	}}
	const cluster = "asked"
	a := f.agent(cluster, spoke.WithInspector(insp))
	answers := readAnswers(t, f.topics[events.TopicAnswers])

	question := func(cluster, name string, expires time.Time) *event.Event {
		t.Helper()
		q := schemas.QueryRequested{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: name},
			RequestID: name + "-" + time.Now().Format("150405.000000"), Query: schemas.QueryTree, ExpiresAt: expires}
		e, err := events.New("//argosy.dev/hub/test", events.TypeQueryRequested,
			events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: "argocd", Name: name}.String(), cluster, q)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	later := func() time.Time { return time.Now().Add(time.Minute) }
	// Asked before the agent starts, and still wanted when it does: the
	// agent answers it. Then a copy of it is appended.
	first := question(cluster, "web", later())
	recs, err := f.prod.Publish(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	defer a.start(t)()
	got := answers.wait(questionID(t, first), time.Minute)
	if got == nil || got.Code != "" || !strings.Contains(string(got.Answer), "web") || got.Cluster != cluster {
		t.Fatalf("answer to the question asked before the agent started: %+v, want the tree of web", got)
	}
	replay := &kgo.Record{Topic: recs[0].Topic, Partition: recs[0].Partition, Key: recs[0].Key, Value: recs[0].Value, Headers: recs[0].Headers}
	if err := f.client.ProduceSync(t.Context(), replay).FirstErr(); err != nil {
		t.Fatal(err)
	}

	expired := question(cluster, "late", time.Now().Add(-time.Second))
	hidden, huge, broken := question(cluster, "hidden", later()), question(cluster, "huge", later()), question(cluster, "broken", later())
	f.publish(f.prod, expired, hidden, huge, broken)
	// Signed for another cluster, appended under this one's key: the
	// decoder refuses it (wrong_target) whatever the record key says.
	other := question("other", "web", later())
	elsewhere, err := f.prod.Publish(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	forged := &kgo.Record{Topic: elsewhere[0].Topic, Key: []byte(cluster), Value: elsewhere[0].Value, Headers: elsewhere[0].Headers,
		Partition: events.NewPartitioner(nil).PartitionOf(cluster, 2)}
	if err := kafkatest.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(t.Context(), forged).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if got := answers.wait(questionID(t, hidden), 30*time.Second); got == nil || got.Code != schemas.QueryNotInTree || len(got.Answer) != 0 {
		t.Errorf("answer to hidden %+v, want not_in_tree and no answer", got)
	}
	if got := answers.wait(questionID(t, huge), 30*time.Second); got == nil || got.Code != schemas.QueryTooLarge || len(got.Answer) != 0 {
		t.Errorf("answer to huge %+v, want too_large and no answer", got)
	}
	if got := answers.wait(questionID(t, broken), 30*time.Second); got == nil || got.Code != schemas.QueryFailed || !strings.Contains(got.Error, "apiserver is down") {
		t.Errorf("answer to broken %+v, want failed with the cause", got)
	}
	time.Sleep(2 * time.Second) // what follows must not happen
	if n := answers.count(questionID(t, first)); n != 1 {
		t.Errorf("the question and its copy were answered %d times, want once", n)
	}
	if answers.count(questionID(t, expired)) != 0 || answers.count(questionID(t, other)) != 0 {
		t.Errorf("an expired or misrouted question was answered")
	}
	insp.mu.Lock()
	if insp.asked[questionID(t, expired)] != 0 || insp.asked[questionID(t, first)] != 1 {
		t.Errorf("inspector asked %v: the expired question must not reach it, the first once", insp.asked)
	}
	insp.mu.Unlock()
	if n := a.counter(t, "argosy.spoke.queries", "outcome", "expired"); n != 1 {
		t.Errorf("argosy.spoke.queries{outcome=expired} = %d, want 1", n)
	}
	if n := a.counter(t, "argosy.spoke.queries", "outcome", "repeated"); n != 1 {
		t.Errorf("argosy.spoke.queries{outcome=repeated} = %d, want 1", n)
	}
	dead := kafkatest.Committed(t, f.topics[events.TopicDeadLetter])
	if len(dead) != 1 || header(dead[0], "argosy_dlq_reason") != "wrong_target" {
		t.Errorf("dead letters %d (%v), want the misrouted question as wrong_target", len(dead), dead)
	}
}

func questionID(t *testing.T, e *event.Event) string {
	t.Helper()
	var q schemas.QueryRequested
	if err := e.DataAs(&q); err != nil {
		t.Fatal(err)
	}
	return q.RequestID
}

// answerLog is what the answers topic held, by the request id answered.
type answerLog struct {
	mu  sync.Mutex
	by  map[string][]*schemas.QueryAnswered
	new chan struct{}
}

// readAnswers reads the answers topic from its start until the test ends.
func readAnswers(t *testing.T, topic string) *answerLog {
	t.Helper()
	l := &answerLog{by: map[string][]*schemas.QueryAnswered{}, new: make(chan struct{}, 1)}
	cl := kafkatest.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				var a schemas.QueryAnswered
				if err := json.Unmarshal(r.Value, &a); err != nil {
					t.Errorf("an answer does not decode: %v", err)
					return
				}
				l.mu.Lock()
				l.by[a.RequestID] = append(l.by[a.RequestID], &a)
				l.mu.Unlock()
				select {
				case l.new <- struct{}{}:
				default:
				}
			})
		}
	}()
	return l
}

// wait returns the first answer to request id, or nil after within.
func (l *answerLog) wait(id string, within time.Duration) *schemas.QueryAnswered {
	deadline := time.After(within)
	for {
		l.mu.Lock()
		as := l.by[id]
		l.mu.Unlock()
		if len(as) > 0 {
			return as[0]
		}
		select {
		case <-l.new:
		case <-deadline:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// count is how many answers request id had.
func (l *answerLog) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by[id])
}
