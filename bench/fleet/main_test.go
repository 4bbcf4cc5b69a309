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

func TestNetstatValue(t *testing.T) {
	const netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 3 9607 9610\n" +
		"IpExt: InNoRoutes ListenOverflows\nIpExt: 0 5\n"
	for _, c := range []struct {
		section, name string
		want          int64
	}{
		{"TcpExt:", "ListenOverflows", 9607},
		{"TcpExt:", "ListenDrops", 9610},
		{"IpExt:", "ListenOverflows", 5},
		{"TcpExt:", "Missing", 0},
	} {
		if got := netstatValue(netstat, c.section, c.name); got != c.want {
			t.Errorf("netstatValue(%s %s) = %d, want %d", c.section, c.name, got, c.want)
		}
	}
}
