package events

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/argosyproj/argosy/schemas"
)

// KeySource finds public keys by id. *Registry is one.
type KeySource interface {
	Key(id string) (Key, bool)
	// Covers reports whether the source has applied every trust event up
	// to log time t, so that a key it does not know at t is truly unknown.
	Covers(t time.Time) bool
	// WaitCovers returns once Covers(t) holds, or with ctx's error.
	WaitCovers(ctx context.Context, t time.Time) error
}

// Verifier checks an event's DSSE signature against the keys of a KeySource
// and whether the signing key may sign that type of event.
type Verifier struct {
	keys KeySource
	// expanded caches each public key's decompressed point, by key bytes:
	// keys repeat from record to record, and decompressing one is a third
	// of a verification.
	expanded sync.Map // string -> *voi.ExpandedPublicKey
}

// stdlib makes verification accept exactly what crypto/ed25519.Verify
// accepts; curve25519-voi does it in about half the time.
var stdlib = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verify reports whether sig is pub's signature of msg, as
// crypto/ed25519.Verify would.
func (v *Verifier) verify(pub ed25519.PublicKey, msg, sig []byte) bool {
	var x *voi.ExpandedPublicKey
	if c, ok := v.expanded.Load(string(pub)); ok {
		x = c.(*voi.ExpandedPublicKey)
	} else {
		var err error
		if x, err = voi.NewExpandedPublicKey(voi.PublicKey(pub)); err != nil {
			return false // not a point: crypto/ed25519 rejects it too
		}
		v.expanded.Store(string(pub), x)
	}
	return voi.VerifyExpandedWithOptions(x, msg, sig, stdlib)
}

// NewVerifier returns a verifier backed by keys.
func NewVerifier(keys KeySource) *Verifier { return &Verifier{keys: keys} }

// Verify checks e's signature as of log time at and returns a new event that
// holds only verified content: the context attributes, the data and the
// signed extensions. It also returns the key that verified it.
//
// The envelope must carry at least one signature and no two from the same
// key; one valid signature suffices, from a known key that was valid at at
// and that accept (nil: any key) allows to sign e.
func (v *Verifier) Verify(e *event.Event, at time.Time, accept func(Key) error) (*event.Event, Key, error) {
	signed, key, _, err := v.check(e, at, accept)
	if err != nil {
		return nil, Key{}, err
	}
	out := e.Clone()
	keepVerified(&out, signed)
	return &out, key, nil
}

// check is Verify without the copy: it returns the signed extensions' names,
// the key that verified e and e's signatures.
func (v *Verifier) check(e *event.Event, at time.Time, accept func(Key) error) ([]string, Key, *sigSet, error) {
	if accept == nil {
		accept = func(Key) error { return nil }
	}
	set, err := signaturesOf(e)
	if err != nil {
		return nil, Key{}, nil, err
	}
	signed, err := parseSignedExtAttrs(stringExt(e, ExtSignedExtAttrs))
	if err != nil {
		return nil, Key{}, nil, reject(ErrBadSignature, err)
	}
	material, err := verificationMaterial(e, signed)
	if err != nil {
		return nil, Key{}, nil, reject(ErrBadSignature, err)
	}
	if set.payload != nil && !bytes.Equal(set.payload, material) {
		return nil, Key{}, nil, reject(ErrBadSignature, errors.New("event does not match its verification material"))
	}
	set.payload = material
	named, hasNamed, err := namedTrustOffset(e, signed)
	if err != nil {
		return nil, Key{}, nil, reject(ErrMalformed, err)
	}
	lookup, err := v.lookup(at, named, hasNamed)
	if err != nil {
		return nil, Key{}, nil, err
	}
	key, err := v.checkSignatures(set, lookup, at, accept)
	if err != nil {
		return nil, Key{}, nil, err
	}
	return signed, key, set, nil
}

// sigSet is an event's signatures, of either form, and the verification
// material they sign: as the DSSE envelope carries it, or nil until the
// reader computes it for the compact form.
type sigSet struct {
	payload []byte
	sigs    []keySig
}

// keySig is one key's signature.
type keySig struct {
	keyID string // hex, as KeyID returns it
	sig   []byte
}

// signaturesOf reads e's signatures from sig or dssematerial. An event
// that carries both is refused: one reader would check the one, another
// the other.
func signaturesOf(e *event.Event) (*sigSet, error) {
	compact, dsseRaw := stringExt(e, ExtSig), stringExt(e, ExtDSSEMaterial)
	var set *sigSet
	var err error
	switch {
	case compact != "" && dsseRaw != "":
		return nil, reject(ErrBadSignature, errors.New("both sig and dssematerial are set"))
	case compact != "":
		set, err = compactOf(compact)
	case dsseRaw != "":
		set, err = envelopeOf(dsseRaw)
	default:
		return nil, reject(ErrUnsigned, errNoMaterial)
	}
	if err != nil {
		return nil, err
	}
	if len(set.sigs) == 0 {
		return nil, reject(ErrNoSignatures, nil)
	}
	if id, ok := duplicateKeyID(set.sigs); ok {
		return nil, reject(ErrDuplicateSignature, fmt.Errorf("key %q signed twice", id))
	}
	return set, nil
}

// compactOf reads the sig attribute, ExtSig's form.
func compactOf(raw string) (*sigSet, error) {
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, reject(ErrBadSignature, fmt.Errorf("sig is not base64: %w", err))
	}
	sigs, err := parseSig(b)
	if err != nil {
		return nil, err
	}
	return &sigSet{sigs: sigs}, nil
}

// parseSig reads ExtSig's bytes: the version, then whole entries of key
// id and signature.
func parseSig(b []byte) ([]keySig, error) {
	switch {
	case len(b) == 0:
		return nil, reject(ErrBadSignature, errors.New("sig is empty"))
	case b[0] != SigVersion1:
		return nil, reject(ErrBadSignature, fmt.Errorf("sig version %d is unknown, want %d", b[0], SigVersion1))
	case len(b) == 1:
		return nil, nil
	case (len(b)-1)%sigEntryLen != 0:
		return nil, reject(ErrBadSignature, fmt.Errorf("sig holds %d bytes after its version, not whole %d-byte entries of key id and signature", len(b)-1, sigEntryLen))
	}
	sigs := make([]keySig, 0, (len(b)-1)/sigEntryLen)
	for rest := b[1:]; len(rest) > 0; rest = rest[sigEntryLen:] {
		sigs = append(sigs, keySig{keyID: hex.EncodeToString(rest[:keyIDLen]), sig: rest[keyIDLen:sigEntryLen:sigEntryLen]})
	}
	return sigs, nil
}

// envelopeOf reads the dssematerial attribute, the verifiability
// extension's DSSE envelope.
func envelopeOf(raw string) (*sigSet, error) {
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
	set := &sigSet{sigs: make([]keySig, len(env.Signatures))}
	for i, s := range env.Signatures {
		// A signature that is not base64 stays empty and fails to verify.
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			sig = nil
		}
		set.sigs[i] = keySig{keyID: s.KeyID, sig: sig}
	}
	if len(set.sigs) == 0 {
		return set, nil
	}
	if set.payload, err = base64.StdEncoding.DecodeString(env.Payload); err != nil || len(set.payload) != sha256.Size {
		return nil, reject(ErrBadSignature, errors.New("verification material is not a 32-byte digest"))
	}
	return set, nil
}

// duplicateKeyID returns a key id that signed more than once. An envelope
// almost always has one signature, so a map is built only for many.
func duplicateKeyID(sigs []keySig) (string, bool) {
	if len(sigs) <= 8 {
		for i, s := range sigs {
			for _, t := range sigs[:i] {
				if s.keyID == t.keyID {
					return s.keyID, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]bool, len(sigs))
	for _, s := range sigs {
		if seen[s.keyID] {
			return s.keyID, true
		}
		seen[s.keyID] = true
	}
	return "", false
}

// checkSignatures returns the first key whose signature verifies, that was
// valid at at, and that accept allows. If none does, the error names the
// most telling failure, in this order: a bad signature, a key that may not
// sign this event, an unknown key, a key not valid at at.
func (v *Verifier) checkSignatures(set *sigSet, lookup func(string) (Key, bool), at time.Time, accept func(Key) error) (Key, error) {
	pae := dsse.PAE(PayloadTypeDSSE, set.payload)
	var bad, refused, unknown, revoked error
	for _, s := range set.sigs {
		k, ok := lookup(s.keyID)
		if !ok || k.Purpose != schemas.PurposeSigning || k.Algorithm != "ed25519" || len(k.Public) != ed25519.PublicKeySize {
			unknown = fmt.Errorf("key %q", s.keyID)
			continue
		}
		if !v.verify(k.Public, pae, s.sig) {
			bad = fmt.Errorf("signature of key %q does not verify", s.keyID)
			continue
		}
		if !k.ValidAt(at) {
			revoked = fmt.Errorf("key %q valid %s to %s (%s), event at %s", k.ID,
				k.Since.Format(time.RFC3339), k.Until.Format(time.RFC3339), k.Reason, at.Format(time.RFC3339Nano))
			continue
		}
		if err := accept(k); err != nil {
			refused = err
			continue
		}
		return k, nil
	}
	switch {
	case bad != nil:
		return Key{}, reject(ErrBadSignature, bad)
	case refused != nil:
		return Key{}, refused
	case unknown != nil:
		return Key{}, reject(ErrUnknownKey, unknown)
	default:
		return Key{}, reject(ErrRevokedKey, revoked)
	}
}

// lookup returns how to find the keys an event appended at at is judged
// by, or ErrKeysBehind (as a *keysBehind) while they may not be known: a
// trust event the registry has not read may yet register, rotate or revoke
// a key as of at, and judging now could differ from a rebuild. An event
// that names a trust offset is judged by the cut it names (see cut), when
// the key source can; any other by every trust record up to at.
func (v *Verifier) lookup(at time.Time, named int64, hasNamed bool) (func(string) (Key, bool), error) {
	if cs, ok := v.keys.(cutSource); ok && hasNamed {
		c := cut{offset: named, at: at, margin: cs.clockMargin()}
		if !cs.coversCut(c) {
			return nil, &keysBehind{at: at, cut: &c}
		}
		return func(id string) (Key, bool) { return cs.keyAt(id, c) }, nil
	}
	if !v.keys.Covers(at) {
		return nil, &keysBehind{at: at}
	}
	return v.keys.Key, nil
}

// keysBehind is ErrKeysBehind with what to wait for: the cut, when the
// event names one, or else the log time.
type keysBehind struct {
	at  time.Time
	cut *cut
}

func (e *keysBehind) Error() string {
	if e.cut != nil {
		return fmt.Sprintf("%v: event at %s, trust offset %d", ErrKeysBehind, e.at.Format(time.RFC3339Nano), e.cut.offset)
	}
	return fmt.Sprintf("%v: event at %s", ErrKeysBehind, e.at.Format(time.RFC3339Nano))
}

func (e *keysBehind) Unwrap() error { return ErrKeysBehind }

// wait returns once the keys e waits for are known, or with ctx's error.
func (e *keysBehind) wait(ctx context.Context, keys KeySource) error {
	if cs, ok := keys.(cutSource); ok && e.cut != nil {
		return cs.waitCut(ctx, *e.cut)
	}
	return keys.WaitCovers(ctx, e.at)
}

// checkSuccessor refuses a rotation of a hub key that the successor key
// did not sign too. The successor of a trust anchor is an anchor, so the
// rotation must show that its author holds the new key, not only the old
// one. Other data passes.
func (v *Verifier) checkSuccessor(set *sigSet, data any) error {
	rot, ok := data.(*schemas.KeyRotated)
	if !ok || rot.Next.Role != schemas.RoleHub {
		return nil
	}
	pub, err := base64.StdEncoding.DecodeString(rot.Next.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return reject(ErrMalformed, fmt.Errorf("rotation of key %s: the successor's public key is not 32 bytes of base64", rot.KeyID))
	}
	pae := dsse.PAE(PayloadTypeDSSE, set.payload)
	id := KeyID(pub)
	for _, s := range set.sigs {
		if s.keyID == id && v.verify(pub, pae, s.sig) {
			return nil
		}
	}
	return reject(ErrNotAuthorized, fmt.Errorf("rotation of hub key %s to %s is not signed by %s: a hub key's successor must sign its rotation too", rot.KeyID, id, id))
}

// keepVerified removes e's unsigned extensions and cuts its time to the
// whole seconds the signature covers.
func keepVerified(e *event.Event, signed []string) {
	if ec, ok := e.Context.(*event.EventContextV1); ok {
		// Deleting from the map in place spares a copy of every extension.
		for name := range ec.Extensions {
			if !slices.Contains(signed, name) {
				delete(ec.Extensions, name)
			}
		}
	} else {
		for name := range e.Extensions() {
			if !slices.Contains(signed, name) {
				e.SetExtension(name, nil)
			}
		}
	}
	if t := e.Time(); !t.IsZero() {
		e.SetTime(t.UTC().Truncate(time.Second))
	}
}

// extension returns e's extension name (lower case, as SetExtension
// stores it) without copying every extension, as e.Extensions() does.
func extension(e *event.Event, name string) (any, bool) {
	if ec, ok := e.Context.(*event.EventContextV1); ok {
		v, ok := ec.Extensions[name]
		return v, ok
	}
	v, ok := e.Extensions()[name]
	return v, ok
}

func stringExt(e *event.Event, name string) string {
	v, ok := extension(e, name)
	if !ok {
		return ""
	}
	s, _ := v.(string) // extensions read from the wire are strings; others are absent here
	return s
}
