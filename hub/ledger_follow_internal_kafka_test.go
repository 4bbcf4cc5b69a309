//go:build integration

package hub

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestLedgerFollowsOnFromTheCatchUp: the ledger reads what the log held
// at the plan, a range ending before a transaction still open, and then
// follows on: a record appended between the plan and the follow, the open
// transaction's record once it commits and a record after it are each
// taken once, and nothing is taken twice.
func TestLedgerFollowsOnFromTheCatchUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topics := events.DefaultTopics(kafkatest.Prefix(t))
	config := topics[events.TopicConfig]
	adm := kadm.NewClient(kafkatest.Client(t))
	created, err := adm.CreateTopics(ctx, 1, 1, nil, config)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, config)
	plain := kafkatest.Client(t)
	var want []int64 // the records' offsets
	put := func(cl *kgo.Client, v string) {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: config, Value: []byte(v)}).First()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r.Offset)
	}
	put(plain, "0")
	put(plain, "1")
	tx := kafkatest.Client(t, kgo.TransactionalID(kafkatest.Prefix(t)+"open"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	put(tx, "2")
	ranges, err := events.PlanRanges(ctx, adm, []string{config}, events.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []events.Range{{Topic: config, From: 0, To: 2}}; !cmp.Equal(ranges, want) {
		t.Fatalf("planned %v, want %v", ranges, want)
	}
	put(plain, "3") // between the plan and the follow

	taken := &offsetLog{}
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry()), events.WithTopics(topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger(topics, in, time.Hour, slog.New(taken))
	caughtUp := make(chan struct{})
	followed := make(chan error, 1)
	followCtx, stop := context.WithCancel(ctx)
	go func() {
		followed <- l.follow(followCtx, kafkatest.Client(t, events.RangeConsumeOpts()...), ranges, caughtUp)
	}()
	select {
	case <-caughtUp:
	case <-ctx.Done():
		t.Fatal("no catch-up in 30 s")
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	put(plain, "4") // before or past the commit marker
	err = l.wait(ctx, map[string]map[int32]int64{config: {0: max(want[4], 4) + 1}})
	stop()
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("the ledger did not reach the end: %v", err)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), taken.sorted()); diff != "" {
		t.Errorf("records taken, by offset (-want +got):\n%s", diff)
	}
}

// offsetLog is a slog handler that keeps the offsets of the records the
// ledger leaves out as undecodable: every plain record here.
type offsetLog struct {
	mu      sync.Mutex
	offsets []int64
}

func (h *offsetLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *offsetLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *offsetLog) WithGroup(string) slog.Handler            { return h }

func (h *offsetLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "offset" {
			h.mu.Lock()
			h.offsets = append(h.offsets, a.Value.Int64())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *offsetLog) sorted() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(slices.Values(h.offsets))
}
