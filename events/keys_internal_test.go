package events

import (
	"context"
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
