package events

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCommitterInterval checks when a partition's finished records are
// committed: at once when the last commit is an interval old, otherwise
// with a later record's, and whatever is left on a flush.
func TestCommitterInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int64
		c := &committer{interval: 100 * time.Millisecond, commit: func(_ context.Context, rec *kgo.Record) error {
			got = append(got, rec.Offset+1)
			return nil
		}}
		ctx := t.Context()
		for _, step := range []struct {
			after  time.Duration // since the step before
			offset int64
		}{
			{0, 0},                      // no commit yet: committed at once
			{30 * time.Millisecond, 1},  // 30 ms after it: held
			{30 * time.Millisecond, 2},  // 60 ms: held
			{50 * time.Millisecond, 3},  // 110 ms: committed, and 1 and 2 with it
			{100 * time.Millisecond, 4}, // an interval later: committed
			{10 * time.Millisecond, 5},  // held
		} {
			time.Sleep(step.after)
			if err := c.finished(ctx, &kgo.Record{Offset: step.offset}, true); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 { // the first flush commits 5, the second finds nothing to commit
			if err := c.flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff([]int64{1, 4, 5, 6}, got); diff != "" {
			t.Errorf("committed next offsets (-want +got):\n%s", diff)
		}
	})
}

// TestCommitterQuiet checks records without effect (passed over, markers):
// committed only once the quiet interval since the last commit is up, or
// at once with a record that had an effect; an idle partition holding
// only them commits them when the quiet interval is up, unless a batch
// comes first.
func TestCommitterQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int64
		c := &committer{interval: 100 * time.Millisecond, quiet: 10 * time.Second, commit: func(_ context.Context, rec *kgo.Record) error {
			got = append(got, rec.Offset+1)
			return nil
		}}
		ctx := t.Context()
		for _, step := range []struct {
			after  time.Duration
			offset int64
			effect bool
		}{
			{0, 0, true},                       // committed at once
			{time.Second, 1, false},            // held: quiet
			{time.Second, 2, false},            // held
			{time.Second, 3, true},             // an effect: committed, with 1 and 2
			{11 * time.Second, 4, false},       // the quiet interval is up: committed
			{500 * time.Millisecond, 5, false}, // held
		} {
			time.Sleep(step.after)
			if err := c.finished(ctx, &kgo.Record{Offset: step.offset}, step.effect); err != nil {
				t.Fatal(err)
			}
		}
		batches := make(chan []*kgo.Record, 1)
		batches <- []*kgo.Record{{Offset: 6}}
		if recs, ok, err := c.idle(ctx, batches); err != nil || !ok || len(recs) != 1 {
			t.Fatalf("idle with a batch waiting: %v, %t, %v", recs, ok, err)
		}
		if diff := cmp.Diff([]int64{1, 4, 5}, got); diff != "" {
			t.Errorf("a batch that came first was not handed over before the quiet commit (-want +got):\n%s", diff)
		}
		started := time.Now()
		go func() {
			time.Sleep(time.Minute)
			close(batches)
		}()
		if _, ok, err := c.idle(ctx, batches); err != nil || ok {
			t.Fatalf("idle until closed: %t, %v", ok, err)
		}
		if diff := cmp.Diff([]int64{1, 4, 5, 6}, got); diff != "" {
			t.Errorf("committed next offsets (-want +got):\n%s", diff)
		}
		if waited := time.Since(started); waited != time.Minute {
			t.Errorf("idle returned after %s, want the batch channel's close after a minute", waited)
		}
	})
}
