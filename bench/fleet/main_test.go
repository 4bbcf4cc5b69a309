package main

import "testing"

// TestBrokersFor: one broker while the fleet's connections fit in one;
// past that, enough that the trust topic's leader, which every agent
// fetches from, holds its agents and its share of the rest, and one more.
func TestBrokersFor(t *testing.T) {
	for _, c := range []struct{ n, room, want int }{
		{100, 18_000, 1},
		{4_000, 18_000, 1},
		{5_000, 18_000, 3},  // 5,000 + 10,000/3 ≤ 18,000 with 2; one more
		{10_000, 18_000, 5}, // 10,000 + 30,000/4 ≤ 18,000 with 4; one more
		{20_000, 18_000, 1}, // does not fit at all: bench skips it
	} {
		got := brokersFor(c.n, c.room)
		if got != c.want {
			t.Errorf("brokersFor(%d, %d) = %d, want %d", c.n, c.room, got, c.want)
		}
		if b := got - 1; c.n < c.room && b > 1 && c.n+c.n*3/b > c.room {
			t.Errorf("brokersFor(%d, %d): the trust topic's leader holds %d of %d", c.n, c.room, c.n+c.n*3/b, c.room)
		}
	}
}
