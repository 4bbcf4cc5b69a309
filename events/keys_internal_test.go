package events

import (
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
		if d := r.pollFor(now, margin); d != idle {
			t.Fatalf("no waiter: poll for %s, want %s", d, idle)
		}
		want := now.Add(time.Second)
		done := make(chan error, 1)
		go func() { done <- r.WaitCovers(t.Context(), want) }()
		synctest.Wait()
		if wakes != 1 {
			t.Fatalf("a waiter woke the reader %d times, want once", wakes)
		}
		if d := r.pollFor(now, margin); d != time.Second+margin {
			t.Fatalf("waiter for now+1s: poll for %s, want %s", d, time.Second+margin)
		}
		if d := r.pollFor(now.Add(time.Minute), margin); d != trustMinPoll {
			t.Fatalf("past the wanted time plus the margin: poll for %s, want the shortest, %s", d, trustMinPoll)
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
		if d := r.pollFor(now, margin); d != idle {
			t.Fatalf("wanted time covered: poll for %s, want %s", d, idle)
		}
	})
}
