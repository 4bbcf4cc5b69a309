package events

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"github.com/argosyproj/argosy/schemas"
)

// SealingKey is a cluster's X25519 key pair for secrets sealed to it. The hub
// holds only the public half.
type SealingKey struct {
	Public  *[32]byte
	Private *[32]byte
}

// NewSealingKey generates a sealing key pair.
func NewSealingKey() (SealingKey, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return SealingKey{}, fmt.Errorf("generate sealing key: %w", err)
	}
	return SealingKey{Public: pub, Private: priv}, nil
}

// ID returns the key id of the public half.
func (k SealingKey) ID() string { return KeyID(k.Public[:]) }

// ErrSealed is returned when a sealed secret cannot be opened: it was sealed
// to another key or was changed.
var ErrSealed = errors.New("sealed secret cannot be opened")

// Seal encrypts plaintext so that only the holder of the private half of pub
// can read it (NaCl anonymous sealed box: X25519, XSalsa20-Poly1305).
func Seal(pub *[32]byte, plaintext []byte) (schemas.Sealed, error) {
	ct, err := box.SealAnonymous(nil, plaintext, pub, rand.Reader)
	if err != nil {
		return schemas.Sealed{}, fmt.Errorf("seal: %w", err)
	}
	return schemas.Sealed{KeyID: KeyID(pub[:]), Ciphertext: base64.StdEncoding.EncodeToString(ct)}, nil
}

// Open decrypts a sealed secret with k.
func Open(s schemas.Sealed, k SealingKey) ([]byte, error) {
	if s.KeyID != k.ID() {
		return nil, fmt.Errorf("%w: sealed to key %s, have %s", ErrSealed, s.KeyID, k.ID())
	}
	ct, err := base64.StdEncoding.DecodeString(s.Ciphertext)
	if err != nil {
		return nil, fmt.Errorf("%w: ciphertext: %w", ErrSealed, err)
	}
	pt, ok := box.OpenAnonymous(nil, ct, k.Public, k.Private)
	if !ok {
		return nil, ErrSealed
	}
	return pt, nil
}

// SealingKeyFromPrivate rebuilds a sealing key pair from its 32-byte private
// half.
func SealingKeyFromPrivate(priv []byte) (SealingKey, error) {
	if len(priv) != 32 {
		return SealingKey{}, fmt.Errorf("sealing key: %d bytes, want 32", len(priv))
	}
	pub, err := curve25519.X25519(priv, curve25519.Basepoint)
	if err != nil {
		return SealingKey{}, fmt.Errorf("sealing key: %w", err)
	}
	k := SealingKey{Public: new([32]byte), Private: new([32]byte)}
	copy(k.Public[:], pub)
	copy(k.Private[:], priv)
	return k, nil
}
