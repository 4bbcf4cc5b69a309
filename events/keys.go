package events

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
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
}

// NewRegistry returns a registry that trusts anchors from the beginning of
// time. Anchors are the hub's signing keys, configured out of band; they sign
// the trust events that register every other key.
func NewRegistry(anchors ...Key) *Registry {
	r := &Registry{keys: make(map[string]Key, len(anchors))}
	for _, k := range anchors {
		r.keys[k.ID] = k
	}
	return r
}

// HubAnchor returns an anchor Key for a hub signing key.
func HubAnchor(owner string, pub ed25519.PublicKey) Key {
	return Key{ID: KeyID(pub), Owner: owner, Role: schemas.RoleHub, Purpose: schemas.PurposeSigning,
		Algorithm: "ed25519", Public: pub}
}

// Key returns the key with the given id.
func (r *Registry) Key(id string) (Key, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	return k, ok
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
// ignored.
func (r *Registry) Apply(d *Decoded) error {
	at := d.LogTime
	switch p := d.Data.(type) {
	case *schemas.KeyRegistered:
		k, err := keyFrom(*p, at)
		if err != nil {
			return Poison(err)
		}
		return r.add(k)
	case *schemas.KeyRotated:
		next, err := keyFrom(p.Next, at)
		if err != nil {
			return Poison(err)
		}
		r.end(p.KeyID, at, "rotated to "+next.ID)
		return r.add(next)
	case *schemas.KeyRevoked:
		if !r.end(p.KeyID, at, p.Reason) {
			return Poison(fmt.Errorf("revoke key %s: %w", p.KeyID, ErrUnknownKey))
		}
	}
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
		Public: pub, Since: at}, nil
}

func (r *Registry) add(k Key) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.keys[k.ID]; ok {
		if old.Owner != k.Owner || old.Role != k.Role || old.Purpose != k.Purpose {
			return Poison(fmt.Errorf("key %s is already registered to %s/%s", k.ID, old.Role, old.Owner))
		}
		return nil // registered again: the first registration stands
	}
	r.keys[k.ID] = k
	return nil
}

// end sets a key's Until to at unless it already ended earlier.
func (r *Registry) end(id string, at time.Time, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[id]
	if !ok {
		return false
	}
	if k.Until.IsZero() || at.Before(k.Until) {
		k.Until, k.Reason = at, reason
		r.keys[id] = k
	}
	return true
}
