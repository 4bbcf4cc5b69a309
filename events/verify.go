package events

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/argosyproj/argosy/schemas"
)

// KeySource finds public keys by id. *Registry is one.
type KeySource interface {
	Key(id string) (Key, bool)
}

// Verifier checks an event's DSSE signature against the keys of a KeySource
// and whether the signing key may sign that type of event.
type Verifier struct {
	keys KeySource
}

// NewVerifier returns a verifier backed by keys.
func NewVerifier(keys KeySource) *Verifier { return &Verifier{keys: keys} }

// Verify checks e's signature as of log time at and returns a new event that
// holds only verified content: the context attributes, the data and the
// signed extensions. It also returns the key that verified it.
//
// The envelope must carry at least one signature and no two from the same
// key; one valid signature from a known key that was valid at at suffices.
func (v *Verifier) Verify(e *event.Event, at time.Time) (*event.Event, Key, error) {
	env, err := envelopeOf(e)
	if err != nil {
		return nil, Key{}, err
	}
	signed, err := parseSignedExtAttrs(stringExt(e, ExtSignedExtAttrs))
	if err != nil {
		return nil, Key{}, reject(ErrBadSignature, err)
	}
	material, err := verificationMaterial(e, signed)
	if err != nil {
		return nil, Key{}, reject(ErrBadSignature, err)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil || len(payload) != 32 {
		return nil, Key{}, reject(ErrBadSignature, errors.New("verification material is not a 32-byte digest"))
	}
	if !bytes.Equal(payload, material) {
		return nil, Key{}, reject(ErrBadSignature, errors.New("event does not match its verification material"))
	}
	key, err := v.checkSignatures(env, payload, at)
	if err != nil {
		return nil, Key{}, err
	}
	return verifiedCopy(e, signed), key, nil
}

func envelopeOf(e *event.Event) (*dsse.Envelope, error) {
	raw := stringExt(e, ExtDSSEMaterial)
	if raw == "" {
		return nil, reject(ErrUnsigned, errNoMaterial)
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, reject(ErrBadSignature, fmt.Errorf("dssematerial is not base64: %w", err))
	}
	var env dsse.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, reject(ErrBadSignature, fmt.Errorf("dssematerial is not a DSSE envelope: %w", err))
	}
	if env.PayloadType != PayloadTypeDSSE {
		return nil, reject(ErrBadSignature, fmt.Errorf("dsse payload type %q, want %q", env.PayloadType, PayloadTypeDSSE))
	}
	if len(env.Signatures) == 0 {
		return nil, reject(ErrNoSignatures, nil)
	}
	seen := make(map[string]bool, len(env.Signatures))
	for _, s := range env.Signatures {
		if seen[s.KeyID] {
			return nil, reject(ErrDuplicateSignature, fmt.Errorf("key %q signed twice", s.KeyID))
		}
		seen[s.KeyID] = true
	}
	return &env, nil
}

// checkSignatures returns the first key whose signature verifies. If none
// does, the error names the most telling failure: a bad signature over an
// unknown key over a key that was not valid at at.
func (v *Verifier) checkSignatures(env *dsse.Envelope, payload []byte, at time.Time) (Key, error) {
	pae := dsse.PAE(env.PayloadType, payload)
	var bad, revoked, unknown error
	for _, s := range env.Signatures {
		k, ok := v.keys.Key(s.KeyID)
		if !ok || k.Purpose != schemas.PurposeSigning || k.Algorithm != "ed25519" || len(k.Public) != ed25519.PublicKeySize {
			unknown = fmt.Errorf("key %q", s.KeyID)
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil || !ed25519.Verify(k.Public, pae, sig) {
			bad = fmt.Errorf("signature of key %q does not verify", s.KeyID)
			continue
		}
		if !k.ValidAt(at) {
			revoked = fmt.Errorf("key %q valid %s to %s (%s), event at %s", k.ID,
				k.Since.Format(time.RFC3339), k.Until.Format(time.RFC3339), k.Reason, at.Format(time.RFC3339Nano))
			continue
		}
		return k, nil
	}
	switch {
	case bad != nil:
		return Key{}, reject(ErrBadSignature, bad)
	case unknown != nil:
		return Key{}, reject(ErrUnknownKey, unknown)
	default:
		return Key{}, reject(ErrRevokedKey, revoked)
	}
}

// verifiedCopy returns e without unsigned extensions.
func verifiedCopy(e *event.Event, signed []string) *event.Event {
	out := event.New(e.SpecVersion())
	out.SetID(e.ID())
	out.SetSource(e.Source())
	out.SetType(e.Type())
	if s := e.Subject(); s != "" {
		out.SetSubject(s)
	}
	if t := e.Time(); !t.IsZero() {
		out.SetTime(t)
	}
	if s := e.DataSchema(); s != "" {
		out.SetDataSchema(s)
	}
	if ct := e.DataContentType(); ct != "" {
		out.SetDataContentType(ct)
	}
	out.DataEncoded = e.DataEncoded
	out.DataBase64 = e.DataBase64
	for _, name := range signed {
		out.SetExtension(name, e.Extensions()[name])
	}
	return &out
}

func stringExt(e *event.Event, name string) string {
	v, ok := e.Extensions()[name]
	if !ok {
		return ""
	}
	s, _ := v.(string) // extensions read from the wire are strings; others are absent here
	return s
}
