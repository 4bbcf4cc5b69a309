package events

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// ExtTrustOffset is the signed extension attribute in which a signer names
// how far it had read the trust topic when it signed: the offset of the
// next trust record it would read, in decimal. A reader then judges the
// event by a cut of the trust topic (see cut) instead of waiting out the
// clock margin.
const ExtTrustOffset = "trustoffset"

// A cut is the part of the trust topic an event that names a trust offset
// is judged by: every trust record appended at least the clock margin
// before the event, and every record before the offset its signer names,
// unless it was appended more than the margin after the event.
//
// The signer knew every record before its offset, so a key it saw
// registered, rotated or revoked counts at once; a record appended more
// than the margin before the event counts whatever the signer read, so a
// signer that names an old offset gains nothing by it. What the signer
// could not have read, a revocation appended within the margin before the
// event and after the offset named, does not count: the event and the
// revocation were concurrent, and the event stands. Which records a cut
// holds depends on the log alone, so a rebuild, which has read the whole
// trust topic, judges every event as the live reader did, given the same
// margin.
type cut struct {
	offset int64
	at     time.Time
	margin time.Duration
}

// sees reports whether the trust record at m is in the cut.
func (c cut) sees(m mark) bool {
	return !m.at.After(c.at.Add(-c.margin)) || (m.offset < c.offset && !m.at.After(c.at.Add(c.margin)))
}

// namedTrustOffset returns the trust offset e names, if its signature
// covers one (signed lists the extensions it covers); anything but decimal
// digits that make an int64 is an error.
func namedTrustOffset(e *event.Event, signed []string) (int64, bool, error) {
	if !slices.Contains(signed, ExtTrustOffset) {
		return 0, false, nil
	}
	raw := stringExt(e, ExtTrustOffset)
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || strings.Trim(raw, "0123456789") != "" {
		return 0, false, fmt.Errorf("%s %q is not a trust topic offset", ExtTrustOffset, raw)
	}
	return v, true, nil
}

// cutSource is a KeySource that can judge by a cut; *Registry is one.
type cutSource interface {
	keyAt(id string, c cut) (Key, bool)
	coversCut(c cut) bool
	waitCut(ctx context.Context, c cut) error
	clockMargin() time.Duration
}

// keyAt returns key id as the records in c show it: unknown if the record
// that introduced it is not in c, and valid until the earliest end in c.
func (r *Registry) keyAt(id string, c cut) (Key, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	if !ok {
		return Key{}, false
	}
	h := r.history[id]
	if h == nil {
		return k, true
	}
	if !c.sees(h.intro) {
		return Key{}, false
	}
	k.Until, k.Reason = time.Time{}, ""
	for _, e := range h.ends {
		if c.sees(e.mark) && (k.Until.IsZero() || e.until.Before(k.Until)) {
			k.Until, k.Reason = e.until, e.reason
		}
	}
	return k, true
}

// coversCut reports whether every record of c has been applied: every
// record before c's offset and every one up to c's time less the margin,
// or, for an offset the trust topic does not reach, every record up to
// c's time plus the margin (later ones are in no cut of c's).
func (r *Registry) coversCut(c cut) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.coversCutLocked(c)
}

func (r *Registry) coversCutLocked(c cut) bool {
	if !r.following {
		return true
	}
	return (r.read >= c.offset && !c.at.Add(-c.margin).After(r.through)) || !c.at.Add(c.margin).After(r.through)
}

// waitCut returns once the registry covers c, or with ctx's error. While
// the trust topic's reader has not read to c's offset, it asks it for c's
// time plus the margin, which it covers in any case; once it has, for c's
// time less the margin, which one look at the topic's end covers.
func (r *Registry) waitCut(ctx context.Context, c cut) error {
	return r.waitUntil(ctx, func() (bool, time.Time) {
		if r.read >= c.offset {
			return r.coversCutLocked(c), c.at.Add(-c.margin)
		}
		return r.coversCutLocked(c), c.at.Add(c.margin)
	})
}

func (r *Registry) clockMargin() time.Duration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.margin
}

// setClockMargin sets the margin cuts are judged with: the trust topic
// reader's.
func (r *Registry) setClockMargin(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.margin = d
}
