package hub

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Calls that present no credential the hub accepts are not audited one by
// one: anyone can make them, and a record each would let anyone fill the
// audit topic. They are counted (argosy.hub.unauthenticated) and limited
// per source address instead; past the limit the hub answers 429 without
// checking the credential.
const (
	// DefaultUnauthenticatedRate and DefaultUnauthenticatedBurst bound the
	// failed authentications one source address may make: a burst of 20,
	// then 5 a second.
	DefaultUnauthenticatedRate  = 5
	DefaultUnauthenticatedBurst = 20
	// maxSources bounds the addresses the limiter remembers; past it,
	// those idle for sourceIdle are forgotten, and failing that all.
	maxSources = 10000
	sourceIdle = time.Minute
)

// sourceLimiter limits failed authentications per source address.
type sourceLimiter struct {
	mu      sync.Mutex
	sources map[string]*source
	now     func() time.Time
	rate    rate.Limit
	burst   int
}

type source struct {
	lim  *rate.Limiter
	seen time.Time
}

func newSourceLimiter(now func() time.Time, perSecond float64, burst int) *sourceLimiter {
	return &sourceLimiter{sources: map[string]*source{}, now: now, rate: rate.Limit(perSecond), burst: burst}
}

// allow takes one failed authentication from remote (host:port, as
// http.Request.RemoteAddr has it) and reports whether it is within the
// limit.
func (l *sourceLimiter) allow(remote string) bool {
	host := sourceOf(remote)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sources[host]
	if !ok {
		l.forget(now)
		s = &source{lim: rate.NewLimiter(l.rate, l.burst)}
		l.sources[host] = s
	}
	s.seen = now
	return s.lim.AllowN(now, 1)
}

// forget makes room for a new source. l.mu is held.
func (l *sourceLimiter) forget(now time.Time) {
	if len(l.sources) < maxSources {
		return
	}
	for h, s := range l.sources {
		if now.Sub(s.seen) > sourceIdle {
			delete(l.sources, h)
		}
	}
	if len(l.sources) >= maxSources {
		clear(l.sources)
	}
}

// sourceOf returns the address a limit applies to: an IPv4 address, or an
// IPv6 address's /64, which one host may hold whole.
func sourceOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return host
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return host
	}
	return p.String()
}
