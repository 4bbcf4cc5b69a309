package spoke

import (
	"testing"
	"time"
)

// TestAnsweredForgetsExpiredQuestions: the request ids an agent keeps, so
// as to answer each question once, are forgotten once their question is
// past its time, so that they stay as many as the questions of the last
// queryLife, however long the agent runs.
func TestAnsweredForgetsExpiredQuestions(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := &responder{seen: map[string]time.Time{}}
	r.remember("a", t0.Add(time.Minute))
	r.remember("b", t0.Add(3*time.Minute))
	if !r.answered("a", t0) || !r.answered("b", t0) {
		t.Fatal("questions answered a moment ago are not known as answered")
	}
	if r.answered("c", t0.Add(2*time.Minute)) {
		t.Error("a question never answered is known as answered")
	}
	if len(r.seen) != 1 {
		t.Errorf("%d request ids kept two minutes on, want 1 (b's, still in its time)", len(r.seen))
	}
	if r.answered("a", t0.Add(2*time.Minute)) {
		t.Error("a's id is kept past its question's time")
	}
}
