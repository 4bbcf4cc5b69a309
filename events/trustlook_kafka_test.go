//go:build integration

package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// steppedPolls is a trust follower's FetchSource that the test steps: each
// poll says on at that it started, then ends when the follower stops it
// (its ctx ends) or the test steps it, with nothing read (false: a poll
// that ran out its time) or with a real poll of cl (true).
type steppedPolls struct {
	cl   *kgo.Client
	at   chan struct{}
	step chan bool
}

func (s steppedPolls) PollFetches(ctx context.Context) kgo.Fetches {
	select {
	case s.at <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case real := <-s.step:
		if real {
			return s.cl.PollFetches(ctx)
		}
		return nil
	}
}

// TestTrustFollowerLooksRarelyWhileIdle: a follower for which no reader
// waits, and that reads nothing new, does not list the trust topic's end
// again in the rounds that follow (it would within trustLook, 60 s); it
// lists it in the round after a poll that read a new trust record, and a
// reader that waits for coverage gets a look at once.
func TestTrustFollowerLooksRarelyWhileIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	tr := trustRig{rig: newRig(t, 1, nil), g: g}
	lists := &listsByBroker{nodes: map[int32]int{}}
	cl := kafkatest.Client(t, append(events.TrustConsumeOpts(tr.topics), kgo.WithHooks(lists))...)
	src := steppedPolls{cl: cl, at: make(chan struct{}), step: make(chan bool)}
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", tr.f.hub.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(tr.topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := events.NewTrustFollower(cl, tr.topics[events.TopicTrust], in, keys, events.WithClockMargin(10*time.Millisecond),
		events.WithFetchSource(src))
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return f.Run(gctx) })
	waitPoll := func() {
		t.Helper()
		select {
		case <-src.at:
		case <-ctx.Done():
			t.Fatal("the follower never polled")
		}
	}

	waitPoll() // the first look is done
	if _, ok := keys.TrustRead(); !ok {
		t.Fatal("the follower's first look did not find the end of the empty trust topic")
	}
	settled := lists.total()
	for range 4 { // rounds after polls that read nothing
		src.step <- false
		waitPoll()
	}
	if n := lists.total() - settled; n != 0 {
		t.Errorf("%d ListOffsets requests in four idle rounds, want none", n)
	}

	rec := tr.register(ctx, newSigner(t))
	for {
		before := lists.total()
		src.step <- true
		waitPoll()
		if next, _ := keys.TrustRead(); next > rec.Offset {
			if lists.total() == before {
				t.Error("the round after a poll that read a trust record did not list the end")
			}
			break
		}
	}

	waitCtx, waitCancel := context.WithTimeout(ctx, 20*time.Second)
	defer waitCancel()
	waited := make(chan error, 1)
	go func() { waited <- keys.WaitCovers(waitCtx, time.Now()) }()
	for done := false; !done; {
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("a reader waiting for coverage got no look: %v", err)
			}
			done = true
		case <-src.at: // a poll the waiter stops, or one short of its time
		}
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
