package events

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestDuplicateKeyID covers both ways duplicateKeyID looks: pairwise for a
// few signatures, with a map for many.
func TestDuplicateKeyID(t *testing.T) {
	sigs := func(ids ...string) []keySig {
		out := make([]keySig, len(ids))
		for i, id := range ids {
			out[i] = keySig{keyID: id}
		}
		return out
	}
	many := func(n int, last string) []string {
		var ids []string
		for i := range n - 1 {
			ids = append(ids, fmt.Sprintf("k%d", i))
		}
		return append(ids, last)
	}
	for _, tc := range []struct {
		name string
		ids  []string
		want string
	}{
		{"one", []string{"a"}, ""},
		{"two", []string{"a", "b"}, ""},
		{"a pair", []string{"a", "b", "a"}, "a"},
		{"many", many(12, "k99"), ""},
		{"many, the last twice", many(12, "k3"), "k3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dup := duplicateKeyID(sigs(tc.ids...))
			if got != tc.want || dup != (tc.want != "") {
				t.Fatalf("duplicateKeyID = %q, %v; want %q", got, dup, tc.want)
			}
		})
	}
}

// FuzzParseSig feeds arbitrary bytes to the compact signature's decoder.
// It must never panic and fail only with a *DecodeError, and what it reads
// must encode back to the same bytes.
func FuzzParseSig(f *testing.F) {
	s, err := GenerateSigner()
	if err != nil {
		f.Fatal(err)
	}
	next, err := GenerateSigner()
	if err != nil {
		f.Fatal(err)
	}
	both, err := s.Cosigner(next)
	if err != nil {
		f.Fatal(err)
	}
	material := sha256.Sum256([]byte("material"))
	one, two := s.compact(material[:]), both.compact(material[:])
	for _, b := range [][]byte{one, two, {}, {SigVersion1}, {2}, one[:40], append(slices.Clone(one), one[1:]...)} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sigs, err := parseSig(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		again := []byte{SigVersion1}
		for _, s := range sigs {
			id, err := hex.DecodeString(s.keyID)
			if err != nil || len(id) != keyIDLen || len(s.sig) != ed25519.SignatureSize {
				t.Fatalf("entry %q %x: not a 16-byte key id and a signature", s.keyID, s.sig)
			}
			again = append(append(again, id...), s.sig...)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("parsed %x, encodes back to %x", b, again)
		}
	})
}
