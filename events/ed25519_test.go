package events

import (
	"crypto/ed25519"
	"testing"
)

// edgeCases are signatures where Ed25519 verifiers are known to disagree:
// small-order keys and R, non-canonical encodings, S out of range.
func edgeCases(t testing.TB) [][3][]byte {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("argosy")
	good := ed25519.Sign(priv, msg)
	identity := make([]byte, 32)
	identity[0] = 1
	smallR := append(append([]byte{}, identity...), make([]byte, 32)...) // R = identity, S = 0
	nonCanonicalIdentity := make([]byte, 32)                             // y = p+1 encodes 1 again
	copy(nonCanonicalIdentity, []byte{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	highS := append([]byte{}, good...)
	highS[63] |= 0xe0
	flipped := append([]byte{}, good...)
	flipped[0] ^= 1
	return [][3][]byte{
		{pub, msg, good},
		{pub, []byte("other"), good},
		{pub, msg, flipped},
		{pub, msg, highS},
		{pub, msg, good[:63]},
		{identity, msg, smallR},
		{identity, []byte("anything"), smallR},
		{nonCanonicalIdentity, msg, smallR},
		{pub, msg, append(append([]byte{}, nonCanonicalIdentity...), good[32:]...)},
		{make([]byte, 32), msg, good},
		{pub[:31], msg, good},
	}
}

// TestVerifyMatchesStdlib checks that the Verifier accepts exactly the
// signatures crypto/ed25519 accepts, edge cases included.
func TestVerifyMatchesStdlib(t *testing.T) {
	v := NewVerifier(NewRegistry())
	for i, c := range edgeCases(t) {
		want := len(c[0]) == ed25519.PublicKeySize && ed25519.Verify(c[0], c[1], c[2])
		for range 2 { // the second time from the cache
			if got := v.verify(c[0], c[1], c[2]); got != want {
				t.Errorf("case %d: verify = %v, crypto/ed25519 says %v", i, got, want)
			}
		}
	}
}

// FuzzVerifyMatchesStdlib checks the same for arbitrary keys, messages and
// signatures.
func FuzzVerifyMatchesStdlib(f *testing.F) {
	for _, c := range edgeCases(f) {
		f.Add(c[0], c[1], c[2])
	}
	v := NewVerifier(NewRegistry())
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != ed25519.PublicKeySize {
			return // the registry holds only 32-byte keys
		}
		if got, want := v.verify(pub, msg, sig), ed25519.Verify(pub, msg, sig); got != want {
			t.Errorf("verify(%x, %x, %x) = %v, crypto/ed25519 says %v", pub, msg, sig, got, want)
		}
	})
}

// BenchmarkVerifierVerify is the Verifier's signature check, with the key's
// expanded point cached as it is after the first record; compare
// BenchmarkEd25519/verify, crypto/ed25519's.
func BenchmarkVerifierVerify(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 100)
	sig := ed25519.Sign(priv, msg)
	v := NewVerifier(NewRegistry())
	for b.Loop() {
		if !v.verify(pub, msg, sig) {
			b.Fatal("a good signature did not verify")
		}
	}
}
