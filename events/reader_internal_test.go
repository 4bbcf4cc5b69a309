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
			if err := c.finished(ctx, &kgo.Record{Offset: step.offset}); err != nil {
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
