package main

import "testing"

// TestBrokersFor: one broker while the fleet's connections fit in one;
// past that, enough that the connections an agent holds on several
// brokers, spread over them, fit, and one more.
func TestBrokersFor(t *testing.T) {
	for _, c := range []struct{ n, room, want int }{
		{100, 18_000, 1},
		{4_000, 18_000, 1},  // 16,000 fit one
		{5_000, 18_000, 3},  // 35,000 need 2; one more
		{10_000, 18_000, 5}, // 70,000 need 4; one more
		{20_000, 18_000, 9},
	} {
		got := brokersFor(c.n, c.room)
		if got != c.want {
			t.Errorf("brokersFor(%d, %d) = %d, want %d", c.n, c.room, got, c.want)
		}
		if b := got - 1; b > 0 && c.n*7/b > c.room {
			t.Errorf("brokersFor(%d, %d): %d brokers hold %d each, of %d", c.n, c.room, b, c.n*7/b, c.room)
		}
	}
}
