package hub

import (
	"fmt"
	"testing"
	"time"
)

func TestSourceLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newSourceLimiter(func() time.Time { return now }, 1, 3)
	for i := range 3 {
		if !l.allow("192.0.2.1:1000") {
			t.Fatalf("call %d of a burst of 3 refused", i+1)
		}
	}
	if l.allow("192.0.2.1:2000") {
		t.Error("a fourth call from the same address, another port, was allowed")
	}
	if !l.allow("192.0.2.2:1000") {
		t.Error("another address was limited")
	}
	// One host's /64 is one source.
	for i := range 3 {
		l.allow("[2001:db8:1:2::" + string(rune('a'+i)) + "]:1")
	}
	if l.allow("[2001:db8:1:2::ffff]:1") {
		t.Error("another address of the same IPv6 /64 was allowed past the limit")
	}
	if !l.allow("[2001:db8:1:3::1]:1") {
		t.Error("another /64 was limited")
	}
	now = now.Add(time.Second)
	if !l.allow("192.0.2.1:1000") {
		t.Error("the address was still limited a second later, at 1 a second")
	}
}

// TestSourceLimiterBounded fills the limiter with more addresses than it
// keeps: it holds at most maxSources, forgetting the idle ones first, so a
// scan from many addresses costs bounded memory.
func TestSourceLimiterBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newSourceLimiter(func() time.Time { return now }, 1, 1)
	l.allow("198.51.100.1:1") // idle from now on
	now = now.Add(2 * sourceIdle)
	for i := range maxSources + 100 {
		l.allow(fmt.Sprintf("203.0.%d.%d:1", i>>8&255, i&255))
		if n := len(l.sources); n > maxSources {
			t.Fatalf("%d addresses kept, at most %d", n, maxSources)
		}
	}
	if _, ok := l.sources["198.51.100.1"]; ok {
		t.Error("the idle address was kept")
	}
}
