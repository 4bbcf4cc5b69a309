package events

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitCoversWakesTheTrustReader checks the demand side of a following
// registry: with no waiter the trust reader polls at its idle pace; a
// waiter for a later time stops its poll once, and the reader's next poll
// lasts only until that time can be covered; coverage that moves short of
// it wakes nobody again.
func TestWaitCoversWakesTheTrustReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const margin, idle = 2 * time.Second, trustIdle
		r := NewFollowingRegistry()
		wakes := 0
		r.setWake(func() { wakes++ })
		now := time.Now()
		if d := r.pollFor(now, margin, false); d != idle {
			t.Fatalf("no waiter: poll for %s, want %s", d, idle)
		}
		want := now.Add(time.Second)
		done := make(chan error, 1)
		go func() { done <- r.WaitCovers(t.Context(), want) }()
		synctest.Wait()
		if wakes != 1 {
			t.Fatalf("a waiter woke the reader %d times, want once", wakes)
		}
		if d := r.pollFor(now, margin, false); d != time.Second+margin {
			t.Fatalf("waiter for now+1s: poll for %s, want %s", d, time.Second+margin)
		}
		if d := r.pollFor(now.Add(time.Minute), margin, false); d != trustMinPoll {
			t.Fatalf("past the wanted time plus the margin, short of the end: poll for %s, want the shortest, %s", d, trustMinPoll)
		}
		if d := r.pollFor(now.Add(time.Minute), margin, true); d != 0 {
			t.Fatalf("past the wanted time plus the margin, at the end: poll for %s, want none", d)
		}
		r.Advance(now)
		synctest.Wait()
		if wakes != 1 {
			t.Fatalf("coverage short of the wanted time woke the reader again (%d wakes)", wakes)
		}
		r.Advance(want)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := r.pollFor(now, margin, false); d != idle {
			t.Fatalf("wanted time covered: poll for %s, want %s", d, idle)
		}
	})
}

// TestWaitRead waits for the trust topic's reader by offset: a following
// registry answers once the reader has read to the offset, or with the
// context's error; a fixed one at once.
func TestWaitRead(t *testing.T) {
	if err := NewRegistry().WaitRead(t.Context(), 10); err != nil {
		t.Errorf("a fixed registry: %v", err)
	}
	r := NewFollowingRegistry()
	woken := make(chan struct{}, 1)
	r.setWake(func() { woken <- struct{}{} })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := r.WaitRead(ctx, 3); err == nil {
		t.Fatal("WaitRead(3) returned before the reader read offset 2")
	}
	select {
	case <-woken:
	default:
		t.Error("WaitRead did not wake the reader's idle poll")
	}
	done := make(chan error, 1)
	go func() { done <- r.WaitRead(t.Context(), 3) }()
	r.setRead(2)
	r.setRead(3)
	if err := <-done; err != nil {
		t.Errorf("WaitRead(3) after the reader read to 3: %v", err)
	}
}

// TestWaiterBetweenPollForAndSetWake: the trust reader plans its poll
// (pollFor) and then starts it (setWake); a waiter that comes between the
// two finds no poll to stop, and one the plan did not count on. Starting
// the poll must stop it at once, or the waiter waits out the idle poll
// (5 s) for what one look at the topic's end gives.
func TestWaiterBetweenPollForAndSetWake(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "time", true: "cut"}[named], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const margin = 2 * time.Second
				r := NewFollowingRegistry()
				now := time.Now()
				r.setRead(4)
				r.Advance(now.Add(-margin - time.Second))
				if d := r.pollFor(now, margin, true); d != trustIdle {
					t.Fatalf("no waiter: poll for %s, want %s", d, trustIdle)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					if named {
						done <- r.waitCut(ctx, cut{offset: 4, at: now, margin: margin})
					} else {
						done <- r.WaitCovers(ctx, now.Add(-margin))
					}
				}()
				synctest.Wait()
				stopped := false
				r.setWake(func() { stopped = true })
				if !stopped {
					t.Errorf("a waiter (named cut %t) that came after the poll was planned, before it started: the %s poll is not stopped", named, trustIdle)
				}
				r.setWake(nil)
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("the waiter: %v, want the context's error", err)
				}
			})
		})
	}
}

// TestEarlierWaiterWakesTheTrustReader: a waiter for an event that names
// an offset the reader has not read wants the event's time plus the
// margin covered, which takes a while; one for an event it has read to
// wants that time less the margin, which one look at the end gives. The
// second must not wait behind the first: it stops the reader's poll, and
// the reader's next poll, at the end, lasts no time.
func TestEarlierWaiterWakesTheTrustReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const margin = 2 * time.Second
		r := NewFollowingRegistry()
		now := time.Now()
		r.setRead(4)
		r.Advance(now.Add(-margin - time.Second))
		wakes := 0
		r.setWake(func() { wakes++ })
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 2)
		for _, offset := range []int64{1000, 4} { // past what the reader read; read
			go func() { done <- r.waitCut(ctx, cut{offset: offset, at: now, margin: margin}) }()
			synctest.Wait()
		}
		if wakes != 2 {
			t.Errorf("two waiters, the second wanting an earlier time: the poll stopped %d times, want twice", wakes)
		}
		if d := r.pollFor(now, margin, true); d != 0 {
			t.Errorf("at the end, a waiter covered by a look now: poll for %s, want none", d)
		}
		r.Advance(now.Add(-margin))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the waiter left asks again once coverage moved
		if d := r.pollFor(now, margin, true); d != 2*margin {
			t.Errorf("the waiter left wants the event's time plus the margin: poll for %s, want %s", d, 2*margin)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the waiter left: %v, want the context's error", err)
		}
	})
}
