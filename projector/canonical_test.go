package projector_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/argosyproj/argosy/projector"
)

// canonicalCases are testdata/canonical.json's cases, which the outside
// verifier (events/internal/pyreader/audit_verify.py) meets too.
func canonicalCases(tb testing.TB) []struct{ In, Out string } {
	tb.Helper()
	b, err := os.ReadFile("testdata/canonical.json")
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Cases []struct{ In, Out string }
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Cases) == 0 {
		tb.Fatalf("testdata/canonical.json: %d cases, %v", len(doc.Cases), err)
	}
	return doc.Cases
}

func TestCanonicalJSON(t *testing.T) {
	for _, c := range canonicalCases(t) {
		t.Run(c.In, func(t *testing.T) {
			got, err := projector.CanonicalJSON([]byte(c.In))
			if err != nil || string(got) != c.Out {
				t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", c.In, got, err, c.Out)
			}
		})
	}
}

func TestCanonicalJSONRefuses(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `[1,]`, `1 2`, `{"a":1}x`, `1e400`, `-1e400`, `NaN`, `{"a":[1e999]}`} {
		t.Run(in, func(t *testing.T) {
			if got, err := projector.CanonicalJSON([]byte(in)); err == nil {
				t.Errorf("CanonicalJSON(%q) = %s, want an error", in, got)
			}
		})
	}
}

// FuzzCanonicalJSON checks, for any input: what it accepts is valid JSON
// that holds the same value, its own canonical form, and the canonical
// form of the same value however it is written (compacted, or indented).
func FuzzCanonicalJSON(f *testing.F) {
	for _, c := range canonicalCases(f) {
		f.Add(c.In)
	}
	f.Add(`{"z":{"b":[true,false,null],"a":"\u003c\u0026\u003e"},"y":-0.0}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := projector.CanonicalJSON([]byte(in))
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("CanonicalJSON(%q) = %q, not JSON", in, got)
		}
		var want, have any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", in, err)
		}
		if err := json.Unmarshal(got, &have); err != nil || !reflect.DeepEqual(normalZero(want), normalZero(have)) {
			t.Fatalf("CanonicalJSON(%q) = %q: value %#v, want %#v (%v)", in, got, have, want, err)
		}
		if again, err := projector.CanonicalJSON(got); err != nil || string(again) != string(got) {
			t.Fatalf("CanonicalJSON(%q) = %q, not its own canonical form (%q, %v)", in, got, again, err)
		}
		indented, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			return // encoding/json cannot write it back (a float it rounded to infinity)
		}
		if other, err := projector.CanonicalJSON(indented); err != nil || string(other) != string(got) {
			t.Fatalf("the same value written as %q: %q, want %q (%v)", indented, other, got, err)
		}
	})
}

// normalZero makes -0 equal 0, as the canonical form does.
func normalZero(v any) any {
	switch v := v.(type) {
	case float64:
		if v == 0 {
			return 0.0
		}
	case []any:
		for i := range v {
			v[i] = normalZero(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalZero(v[k])
		}
	}
	return v
}
