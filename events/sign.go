package events

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Extension attributes of the CloudEvents verifiability extension.
const (
	ExtDSSEMaterial   = "dssematerial"
	ExtSignedExtAttrs = "signedextattrs"
	// PayloadTypeDSSE is the DSSE payload type of the verification material.
	PayloadTypeDSSE = "https://cloudevents.io/verifiability/dsse/v0.1"
)

// ExtSig is Argosy's compact signature attribute, the form SigCompact
// writes in place of dssematerial: standard base64 of a version byte
// (SigVersion1) and, for each signing key, the 16 bytes of its KeyID and
// its 64-byte Ed25519 signature of the same DSSE PAE that dssematerial's
// envelope signs. The envelope's payload, the verification material, is
// left out: a reader recomputes it from the event.
const ExtSig = "sig"

// SigVersion1 is the first byte of the only version of ExtSig.
const SigVersion1 byte = 1

// sigEntryLen is the bytes of one key's entry in ExtSig: the key id, then
// the signature.
const sigEntryLen = keyIDLen + ed25519.SignatureSize

// keyIDLen is the bytes of a key id, KeyID's hex undone.
const keyIDLen = 16

// SigForm is how a Signer writes the signature of an event.
type SigForm uint8

const (
	// SigCompact writes ExtSig: the default since it was introduced.
	SigCompact SigForm = iota
	// SigDSSE writes the verifiability extension's dssematerial, a DSSE
	// JSON envelope, as every writer did before SigCompact: for a fleet
	// whose readers are upgraded after its writers (docs/design.md).
	SigDSSE
)

// String names the form as its flag value does.
func (f SigForm) String() string {
	if f == SigDSSE {
		return "dsse"
	}
	return "compact"
}

// ParseSigForm reads a SigForm by its String: compact or dsse.
func ParseSigForm(s string) (SigForm, error) {
	switch s {
	case SigCompact.String():
		return SigCompact, nil
	case SigDSSE.String():
		return SigDSSE, nil
	}
	return 0, fmt.Errorf("signature form %q: want compact or dsse", s)
}

// Extension attributes of a config event the hub wrote for an API call
// that carried an Idempotency-Key. The hub's ledger reads them back, on
// every replica and after a restart, to tell a retry of the same request
// (answered with what the first wrote) from another request under the
// same key (refused).
const (
	// ExtIdempotencyKey names the call's key without holding it: the
	// hex of the first 16 bytes of the SHA-256 of the actor's name, a
	// zero byte and the key.
	ExtIdempotencyKey = "idempotencykey"
	// ExtRequestDigest is the hex SHA-256 of the request the key was
	// first used for: its method, path, query and body.
	ExtRequestDigest = "requestdigest"
)

// signedExtensions are the extension attributes Argosy signs, in order,
// each when the event carries it. Trace context (traceparent, tracestate)
// is left unsigned on purpose: it is telemetry, and intermediaries may
// rewrite it.
var signedExtensions = []string{ExtPartitionKey, ExtIdempotencyKey, ExtRequestDigest, ExtTrustOffset}

// KeyID returns the id of a public key: the hex SHA-256 of the raw key,
// truncated to 16 bytes.
func KeyID(pub []byte) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:keyIDLen])
}

// Signer signs events with one Ed25519 key, or, made by Cosigner, with
// two.
type Signer struct {
	key ed25519.PrivateKey
	id  string
	env *dsse.EnvelopeSigner
	// ids are the ids of every key it signs with, its own first; keys
	// are those keys.
	ids  []string
	keys []ed25519.PrivateKey
	// trust, when set, says how far the signer has read the trust topic
	// (Registry.TrustRead), which Sign names in ExtTrustOffset.
	trust func() (int64, bool)
}

// WithTrustOffset returns a copy of s that names, in every event it signs
// (ExtTrustOffset), how far read says the signer has read the trust topic
// when it signs, if read says it knows: readers then judge the event by
// the keys that offset and the clock margin show, as soon as they have
// read as far, instead of waiting out the margin. read is the signer's
// Registry.TrustRead.
func (s *Signer) WithTrustOffset(read func() (int64, bool)) *Signer {
	c := *s
	c.trust = read
	return &c
}

// NewSigner returns a signer for key.
func NewSigner(key ed25519.PrivateKey) (*Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("ed25519 private key: want %d bytes, got %d", ed25519.PrivateKeySize, len(key))
	}
	s := &Signer{key: key, id: KeyID(key.Public().(ed25519.PublicKey))}
	s.ids, s.keys = []string{s.id}, []ed25519.PrivateKey{key}
	env, err := dsse.NewEnvelopeSigner(dsseKey{s})
	if err != nil {
		return nil, fmt.Errorf("dsse signer: %w", err)
	}
	s.env = env
	return s, nil
}

// Cosigner returns a signer that signs every event with s's key and with
// next's, two signatures in one envelope; its KeyID and Public stay s's.
// It serves the rotation of s's key to next's: readers that know either
// key accept its events, and a key.rotated event of a hub key must carry
// the successor's signature, proof that the rotation's author holds it.
func (s *Signer) Cosigner(next *Signer) (*Signer, error) {
	if next == nil || next.id == s.id || len(s.ids) > 1 || len(next.ids) > 1 {
		return nil, errors.New("cosigner: want two different single-key signers")
	}
	c := &Signer{key: s.key, id: s.id, ids: []string{s.id, next.id}, keys: []ed25519.PrivateKey{s.key, next.key}}
	env, err := dsse.NewEnvelopeSigner(dsseKey{s}, dsseKey{next})
	if err != nil {
		return nil, fmt.Errorf("dsse signer: %w", err)
	}
	c.env = env
	return c, nil
}

// KeyIDs returns the ids of every key the signer signs with, its own
// first.
func (s *Signer) KeyIDs() []string { return slices.Clone(s.ids) }

// DeriveKeys returns a 32-byte secret for purpose from each key the
// signer signs with, in KeyIDs' order: HKDF-SHA256 over the key's seed,
// with the purpose in its info. Every holder of a key derives the same
// secret, and no signature tells anything of it: the hub's replicas seal
// their dashboard sessions with one.
func (s *Signer) DeriveKeys(purpose string) ([][]byte, error) {
	out := make([][]byte, len(s.keys))
	for i, k := range s.keys {
		b, err := hkdf.Key(sha256.New, k.Seed(), nil, "argosy "+purpose, 32)
		if err != nil {
			return nil, fmt.Errorf("derive a key for %s: %w", purpose, err)
		}
		out[i] = b
	}
	return out, nil
}

// GenerateSigner returns a signer for a new random key.
func GenerateSigner() (*Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return NewSigner(priv)
}

// KeyID returns the id of the signer's key.
func (s *Signer) KeyID() string { return s.id }

// Public returns the signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign sets signedextattrs and, in the SigCompact form, sig on e. Sign it
// last: any later change to a signed attribute or the data breaks the
// signature.
func (s *Signer) Sign(ctx context.Context, e *event.Event) error {
	return s.SignAs(ctx, e, SigCompact)
}

// SignAs is Sign that writes the signature in form f, and removes one
// that e carries in the other form.
func (s *Signer) SignAs(ctx context.Context, e *event.Event, f SigForm) error {
	if s.trust != nil {
		if next, ok := s.trust(); ok {
			e.SetExtension(ExtTrustOffset, strconv.FormatInt(next, 10))
		}
	}
	var signed []string
	for _, name := range signedExtensions {
		if _, ok := extension(e, name); ok {
			signed = append(signed, name)
		}
	}
	if len(signed) > 0 {
		e.SetExtension(ExtSignedExtAttrs, strings.Join(signed, ","))
	} else {
		e.SetExtension(ExtSignedExtAttrs, nil)
	}
	material, err := verificationMaterial(e, signed)
	if err != nil {
		return err
	}
	if f != SigDSSE {
		e.SetExtension(ExtDSSEMaterial, nil)
		e.SetExtension(ExtSig, base64.StdEncoding.EncodeToString(s.compact(material)))
		return nil
	}
	env, err := s.env.SignPayload(ctx, PayloadTypeDSSE, material)
	if err != nil {
		return fmt.Errorf("sign event %s: %w", e.ID(), err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode dsse envelope: %w", err)
	}
	e.SetExtension(ExtSig, nil)
	e.SetExtension(ExtDSSEMaterial, base64.StdEncoding.EncodeToString(raw))
	return nil
}

// compact returns ExtSig's bytes for material: the version, then each
// key's id and its signature of material's DSSE PAE.
func (s *Signer) compact(material []byte) []byte {
	pae := dsse.PAE(PayloadTypeDSSE, material)
	b := make([]byte, 1, 1+len(s.keys)*sigEntryLen)
	b[0] = SigVersion1
	for _, k := range s.keys {
		id := sha256.Sum256(k.Public().(ed25519.PublicKey))
		b = append(b, id[:keyIDLen]...)
		b = append(b, ed25519.Sign(k, pae)...)
	}
	return b
}

// dsseKey adapts Signer to dsse.Signer.
type dsseKey struct{ s *Signer }

func (k dsseKey) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(k.s.key, data), nil
}
func (k dsseKey) KeyID() (string, error) { return k.s.id, nil }
func (k dsseKey) Public() crypto.PublicKey {
	return k.s.key.Public()
}

// verificationMaterial computes the verifiability extension's
// VERIFICATION_MATERIAL: the SHA-256 of the concatenated SHA-256 digests of
// id, source, specversion, type, datacontenttype, dataschema, subject, time
// (RFC 3339, UTC, whole seconds), data, and each signed extension's name and
// value.
func verificationMaterial(e *event.Event, signedExt []string) ([]byte, error) {
	h := sha256.New()
	add := func(s string) {
		d := sha256.Sum256([]byte(s))
		h.Write(d[:])
	}
	for _, a := range contextAttrs {
		add(a.get(e))
	}
	d := sha256.Sum256(e.Data())
	h.Write(d[:])
	for _, name := range signedExt {
		v, ok := extension(e, name)
		if !ok {
			return nil, fmt.Errorf("signed extension %q is not set", name)
		}
		s, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("signed extension %q: %w", name, err)
		}
		add(name)
		add(s)
	}
	return h.Sum(nil), nil
}

type contextAttr struct {
	name string
	get  func(*event.Event) string
}

// contextAttrs are the context attributes the signature covers, in the order
// the verifiability extension hashes them, with their string forms.
var contextAttrs = []contextAttr{
	{"id", func(e *event.Event) string { return e.ID() }},
	{"source", func(e *event.Event) string { return e.Source() }},
	{"specversion", func(e *event.Event) string { return e.SpecVersion() }},
	{"type", func(e *event.Event) string { return e.Type() }},
	{"datacontenttype", func(e *event.Event) string { return e.DataContentType() }},
	{"dataschema", func(e *event.Event) string { return e.DataSchema() }},
	{"subject", func(e *event.Event) string { return e.Subject() }},
	{"time", func(e *event.Event) string {
		if t := e.Time(); !t.IsZero() {
			return t.UTC().Format(time.RFC3339)
		}
		return ""
	}},
}

// parseSignedExtAttrs checks the signedextattrs list against the
// verifiability extension's rules.
func parseSignedExtAttrs(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	names := strings.Split(v, ",")
	for i, n := range names {
		if n == "" || n == ExtDSSEMaterial || n == ExtSignedExtAttrs || n == ExtSig ||
			slices.ContainsFunc(contextAttrs, func(a contextAttr) bool { return a.name == n }) {
			return nil, fmt.Errorf("signedextattrs: %q may not be listed", n)
		}
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("signedextattrs: %q repeated", n)
		}
	}
	return names, nil
}

var errNoMaterial = errors.New("no dssematerial")

// LoadPublicKey reads an Ed25519 public key from a file that holds it in
// standard base64 (how the hub's key is handed to agents and projectors).
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %s: want a base64 Ed25519 public key: %w", path, errors.Join(err, errors.New("wrong size")))
	}
	return ed25519.PublicKey(b), nil
}
