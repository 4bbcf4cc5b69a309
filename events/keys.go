package events

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

// Key is a public key known to a Registry. A key is valid for events whose
// log time t satisfies Since <= t < Until (Until zero: no end). Keys are never
// forgotten: a revoked key stays known with its revocation point, so replaying
// the log makes the same decisions the live system made.
type Key struct {
	ID        string
	Owner     string
	Role      string
	Purpose   string
	Algorithm string
	Public    []byte
	Since     time.Time
	Until     time.Time
	// Reason is why the key stopped being valid.
	Reason string
	// Anchor marks a trust anchor: a key configured out of band, or the
	// successor of an anchor by a rotation both keys signed. Only anchors
	// may sign trust events.
	Anchor bool
	// Logged is the log time of the first trust event that named the key:
	// its registration, or the rotation that introduced it. It is zero
	// for an anchor only configured out of band.
	Logged time.Time
}

// ValidAt reports whether the key may sign an event appended at t.
func (k Key) ValidAt(t time.Time) bool {
	return !t.Before(k.Since) && (k.Until.IsZero() || t.Before(k.Until))
}

// Registry holds the keys that trust events registered, rotated and revoked,
// plus the trust anchors it was created with. It is safe for concurrent use.
type Registry struct {
	mu   sync.RWMutex
	keys map[string]Key
	// following registries judge only events up to through (see Covers).
	following bool
	through   time.Time
	// advanced is closed, and replaced, whenever through moves.
	advanced chan struct{}
	// want is the earliest log time a waiter needs covered; wake, while
	// the trust topic's reader polls, stops the poll so that it looks
	// again at once.
	want time.Time
	wake func()
	// planned is the want the reader's last pollFor planned its poll
	// for: another one came before the poll could be stopped.
	planned time.Time
	// read is the offset of the trust topic's next record its reader
	// will read: every record before it is applied (or refused).
	read int64
	// reachedEnd is set once the trust topic's reader has read to the
	// end: from then on read names every key committed before the
	// reader started (see TrustRead).
	reachedEnd bool
	// margin is the clock margin of the registry's trust topic reader,
	// which judging by a cut (see cut) needs; it is set by
	// NewTrustFollower, and is DefaultClockMargin until then.
	margin time.Duration
	// history is where in the trust topic each key was introduced and
	// ended, for judging by a cut.
	history map[string]*keyHistory
}

// mark is a place in the trust topic: a record's offset and log time. An
// anchor configured out of band has the zero mark at offset -1, which every
// cut sees.
type mark struct {
	offset int64
	at     time.Time
}

// keyEnd is a trust record that ended a key: at its mark, the key is
// valid until until.
type keyEnd struct {
	mark
	until  time.Time
	reason string
}

// keyHistory is where a key was introduced and every record that ended it.
type keyHistory struct {
	intro mark
	ends  []keyEnd
}

// NewRegistry returns a fixed registry that trusts anchors from the beginning
// of time and covers every log time. Anchors are the hub's signing keys,
// configured out of band; only they sign trust events. It judges an event
// that names a trust offset with the default clock margin, as live
// readers do by default (see cut).
func NewRegistry(anchors ...Key) *Registry {
	r := &Registry{keys: make(map[string]Key, len(anchors)), advanced: make(chan struct{}),
		history: make(map[string]*keyHistory, len(anchors)), margin: DefaultClockMargin}
	for _, k := range anchors {
		k.Anchor = true
		r.keys[k.ID] = k
		r.history[k.ID] = &keyHistory{intro: mark{offset: -1}}
	}
	return r
}

// NewFollowingRegistry returns a registry fed by a reader of the trust topic.
// It covers log times only as far as the trust events it has applied (and
// Advance) show, so events appended later are not judged against keys that
// may still change: the verifier answers ErrKeysBehind for them.
func NewFollowingRegistry(anchors ...Key) *Registry {
	r := NewRegistry(anchors...)
	r.following = true
	return r
}

// HubAnchor returns an anchor Key for a hub signing key.
func HubAnchor(owner string, pub ed25519.PublicKey) Key {
	return Key{ID: KeyID(pub), Owner: owner, Role: schemas.RoleHub, Purpose: schemas.PurposeSigning,
		Algorithm: "ed25519", Public: pub, Anchor: true}
}

// Key returns the key with the given id.
func (r *Registry) Key(id string) (Key, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	return k, ok
}

// Anchors returns the registry's trust anchors as a KeySource that covers
// every log time: the keys that verify trust events. The trust topic has
// one partition and its one reader applies each event before it decodes
// the next, so every rotation before a trust event is applied by the
// time it is judged. Readers of other topics use the registry itself.
func (r *Registry) Anchors() KeySource { return anchors{r} }

type anchors struct{ r *Registry }

func (a anchors) Key(id string) (Key, bool) {
	k, ok := a.r.Key(id)
	return k, ok && k.Anchor
}
func (anchors) Covers(time.Time) bool                       { return true }
func (anchors) WaitCovers(context.Context, time.Time) error { return nil }

// Covers implements KeySource.
func (r *Registry) Covers(t time.Time) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return !r.following || !t.After(r.through)
}

// Advance records that every trust event with a log time up to t has been
// applied. The trust topic's reader calls it when it has read to the end of
// the partition, with a time no later than the broker's clock at that read.
func (r *Registry) Advance(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reachedEnd = true
	r.advance(t)
}

// cover records, for the trust topic's reader, that every trust event
// with a log time up to t has been applied; clean, that it has read to
// the end with no transaction open, as Advance does. While a transaction
// is open, read may not name keys committed before the reader started
// (the open transaction's own, or another's behind it), so TrustRead is
// not known from such a round.
func (r *Registry) cover(t time.Time, clean bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reachedEnd = r.reachedEnd || clean
	r.advance(t)
}

// TrustRead returns the offset of the next trust record the registry's
// reader will read, and whether that reader has read to the end of the
// trust topic at least once. A signer names it in the events it signs
// (ExtTrustOffset), so that readers wait only until they have read as
// far, not for the clock margin; until the first read to the end, it is
// not worth naming (ok false).
func (r *Registry) TrustRead() (next int64, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.read, r.following && r.reachedEnd
}

// advance moves coverage to t, waking WaitCovers. The caller holds r.mu.
func (r *Registry) advance(t time.Time) {
	if t.After(r.through) {
		r.through = t
		close(r.advanced)
		r.advanced = make(chan struct{})
	}
}

// WaitCovers returns once the registry covers log time t (see Covers), or
// with ctx's error. A reader that met ErrKeysBehind waits here, and goes on
// the moment the trust topic's reader has caught up. A wait for an earlier
// time than any other waiter's, or the first, tells that reader to look at
// the trust topic's end as soon as it can say t is covered, rather than at
// its idle pace (see ask).
func (r *Registry) WaitCovers(ctx context.Context, t time.Time) error {
	return r.waitUntil(ctx, func() (bool, time.Time) { return !r.following || !t.After(r.through), t })
}

// waitUntil returns once covered reports true, or with ctx's error.
// covered runs under r.mu and also names the log time the trust reader
// must cover for it; each time it is false, the wait asks the reader for
// that time (see ask) and waits for coverage to move.
func (r *Registry) waitUntil(ctx context.Context, covered func() (bool, time.Time)) error {
	for {
		r.mu.Lock()
		ok, want := covered()
		advanced := r.advanced
		var wake func()
		if !ok {
			wake = r.ask(want)
		}
		r.mu.Unlock()
		if ok {
			return nil
		}
		if wake != nil {
			wake()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-advanced:
		}
	}
}

// ask records that a waiter wants log time t covered, and returns what
// stops the trust reader's poll (nil: nothing to stop, or no need) when
// the reader is to look at the topic's end sooner than it planned: when
// no earlier want is pending. Every waiter asks again whenever coverage
// moves, so the want is the earliest time a waiter needs and not yet
// covered. The caller holds r.mu.
func (r *Registry) ask(t time.Time) func() {
	if r.want.After(r.through) && !t.Before(r.want) {
		return nil
	}
	r.want = t
	return r.wake
}

// setRead records that the trust topic's reader has applied (or refused)
// every record before offset next, waking WaitRead.
func (r *Registry) setRead(next int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if next > r.read {
		r.read = next
		close(r.advanced)
		r.advanced = make(chan struct{})
	}
}

// WaitRead returns once the trust topic's reader has applied every record
// before offset end (the topic's end, as a writer lists it), or with ctx's
// error: then every key committed before the listing is known. It is
// WaitCovers by offset, for a writer that must know the keys now, and it
// waits only for records already in the log, not for the clock margin. A
// fixed registry returns at once.
func (r *Registry) WaitRead(ctx context.Context, end int64) error {
	for woke := false; ; woke = true {
		r.mu.Lock()
		done, advanced, wake := !r.following || r.read >= end, r.advanced, r.wake
		r.mu.Unlock()
		if done {
			return nil
		}
		// The reader may be in an idle poll that started before the
		// records came: it starts another at once.
		if !woke && wake != nil {
			wake()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-advanced:
		}
	}
}

// pollFor is how long the trust topic's reader may poll before it looks at
// the topic's end again: trustIdle, unless a waiter wants a log time
// covered. A look at the end that starts at s covers s less margin, so the
// poll lasts until that time plus margin: no time at all if the reader is
// at the end and that time has come. A reader short of the end polls
// trustMinPoll at least, for records on their way to arrive: it covers
// nothing however often it looks.
func (r *Registry) pollFor(now time.Time, margin time.Duration, atEnd bool) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.planned = r.want
	if !r.want.After(r.through) {
		return trustIdle
	}
	least := trustMinPoll
	if atEnd {
		least = 0
	}
	return min(max(r.want.Add(margin).Sub(now), least), trustIdle)
}

// waiting reports whether a waiter wants a log time the registry does
// not cover yet (see ask).
func (r *Registry) waiting() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.want.After(r.through)
}

// trustMinPoll is the shortest poll of the trust topic's reader while it
// is short of the end.
const trustMinPoll = 50 * time.Millisecond

// setWake sets what WaitCovers calls to stop the trust reader's poll; nil
// when it is not polling. A waiter that came after the reader planned the
// poll (pollFor) and before it started found nothing to stop, and the plan
// did not count on it: the poll is stopped as it starts.
func (r *Registry) setWake(wake func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wake = wake
	if wake != nil && !r.want.Equal(r.planned) {
		wake()
	}
}

// Keys returns every known key, valid or not.
func (r *Registry) Keys() []Key {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Key, 0, len(r.keys))
	for _, k := range r.keys {
		out = append(out, k)
	}
	return out
}

// Apply folds one verified trust event into the registry. It is idempotent:
// applying the same event twice changes nothing. Events of other types are
// ignored. An event that cannot apply (a rotation of an unknown key, a key id
// that does not match its key) changes nothing and is a Poison error.
func (r *Registry) Apply(d *Decoded) error {
	at := mark{offset: d.Offset, at: d.LogTime}
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	switch p := d.Data.(type) {
	case *schemas.KeyRegistered:
		err = r.register(*p, at)
	case *schemas.KeyRotated:
		err = r.rotate(*p, at)
	case *schemas.KeyRevoked:
		err = r.revoke(p.KeyID, at, p.Reason)
	}
	if err != nil {
		return Poison(err)
	}
	// Trust events before this one's log time are all applied (the topic
	// has one partition); events at the same millisecond may follow.
	if r.following {
		r.advance(at.at.Add(-time.Millisecond))
	}
	return nil
}

// introduce records where key id was first named, unless it was named
// before. The caller holds r.mu.
func (r *Registry) introduce(id string, at mark) {
	if _, ok := r.history[id]; !ok {
		r.history[id] = &keyHistory{intro: at}
	}
}

func (r *Registry) register(p schemas.KeyRegistered, m mark) error {
	at := m.at
	k, err := keyFrom(p, at)
	if err != nil {
		return err
	}
	if old, ok := r.keys[k.ID]; ok {
		if old.Owner != k.Owner || old.Role != k.Role || old.Purpose != k.Purpose {
			return fmt.Errorf("key %s is already registered to %s %s", k.ID, old.Role, old.Owner)
		}
		// Registered again: the first registration stands. An anchor
		// published in the log keeps its validity from configuration.
		if old.Logged.IsZero() {
			old.Logged = at
			r.keys[k.ID] = old
		}
		return nil
	}
	r.keys[k.ID] = k
	r.introduce(k.ID, m)
	return nil
}

// rotate starts the new key at at and ends the old one at at plus the
// rotation's overlap. The new key must
// have the old one's owner, role and purpose. The successor of an anchor
// is an anchor: the Decoder accepts a hub key's rotation only with the
// successor's signature beside the old key's.
func (r *Registry) rotate(p schemas.KeyRotated, m mark) error {
	at := m.at
	old, ok := r.keys[p.KeyID]
	if !ok {
		return fmt.Errorf("rotate key %s: %w", p.KeyID, ErrUnknownKey)
	}
	next, err := keyFrom(p.Next, at)
	if err != nil {
		return fmt.Errorf("rotate key %s: %w", p.KeyID, err)
	}
	if next.Owner != old.Owner || next.Role != old.Role || next.Purpose != old.Purpose {
		return fmt.Errorf("rotate key %s (%s %s %s) to a key for %s %s %s", old.ID, old.Role, old.Owner, old.Purpose,
			next.Role, next.Owner, next.Purpose)
	}
	if cur, ok := r.keys[next.ID]; ok && (cur.Owner != next.Owner || cur.Role != next.Role || cur.Purpose != next.Purpose) {
		return fmt.Errorf("rotate key %s: key %s is already registered to %s %s", old.ID, next.ID, cur.Role, cur.Owner)
	} else if !ok {
		next.Anchor = old.Anchor
		r.keys[next.ID] = next
		r.introduce(next.ID, m)
	} else {
		cur.Anchor = cur.Anchor || old.Anchor
		if cur.Logged.IsZero() {
			cur.Logged = at
		}
		r.keys[next.ID] = cur
	}
	reason := "rotated to " + next.ID
	if p.OverlapSeconds > 0 {
		reason += fmt.Sprintf(" with an overlap of %s", time.Duration(p.OverlapSeconds)*time.Second)
	}
	r.end(old.ID, m, at.Add(time.Duration(p.OverlapSeconds)*time.Second), reason)
	return nil
}

func (r *Registry) revoke(id string, m mark, reason string) error {
	if _, ok := r.keys[id]; !ok {
		return fmt.Errorf("revoke key %s: %w", id, ErrUnknownKey)
	}
	r.end(id, m, m.at, reason)
	return nil
}

func keyFrom(p schemas.KeyRegistered, at time.Time) (Key, error) {
	pub, err := base64.StdEncoding.DecodeString(p.PublicKey)
	if err != nil {
		return Key{}, fmt.Errorf("key %s: public key: %w", p.KeyID, err)
	}
	if len(pub) != ed25519.PublicKeySize {
		return Key{}, fmt.Errorf("key %s: public key has %d bytes, want 32", p.KeyID, len(pub))
	}
	if id := KeyID(pub); id != p.KeyID {
		return Key{}, fmt.Errorf("key id %s does not match its public key (%s)", p.KeyID, id)
	}
	return Key{ID: p.KeyID, Owner: p.Owner, Role: p.Role, Purpose: p.Purpose, Algorithm: p.Algorithm,
		Public: pub, Since: at, Logged: at}, nil
}

// end sets a key's Until to at unless it already ended earlier, and
// records that the trust record at m ended it. The caller holds r.mu.
func (r *Registry) end(id string, m mark, at time.Time, reason string) {
	k := r.keys[id]
	if k.Until.IsZero() || at.Before(k.Until) {
		k.Until, k.Reason = at, reason
		r.keys[id] = k
	}
	h := r.history[id]
	if h == nil { // known before the registry kept history: seen by every cut
		h = &keyHistory{intro: mark{offset: -1}}
		r.history[id] = h
	}
	if !slices.ContainsFunc(h.ends, func(e keyEnd) bool { return e.offset == m.offset && e.at.Equal(m.at) }) {
		h.ends = append(h.ends, keyEnd{mark: m, until: at, reason: reason})
	}
}
