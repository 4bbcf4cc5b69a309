package events

import (
	"fmt"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// TestDuplicateKeyID covers both ways duplicateKeyID looks: pairwise for a
// few signatures, with a map for many.
func TestDuplicateKeyID(t *testing.T) {
	sigs := func(ids ...string) []dsse.Signature {
		out := make([]dsse.Signature, len(ids))
		for i, id := range ids {
			out[i] = dsse.Signature{KeyID: id}
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
