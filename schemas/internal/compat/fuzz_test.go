package compat

import (
	"io/fs"
	"testing"

	"github.com/argosyproj/argosy/schemas"
)

// FuzzCheck feeds arbitrary pairs of documents to Check. It must never panic,
// and any schema it can read is compatible with itself.
func FuzzCheck(f *testing.F) {
	files := schemas.Files()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(files, e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"type":"object","required":["a"]}`))
	f.Add([]byte(`{"$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, baseline, current []byte) {
		if _, err := Check(baseline, current); err != nil {
			return
		}
		problems, err := Check(baseline, baseline)
		if err != nil {
			t.Fatalf("baseline readable once, not twice: %v", err)
		}
		if len(problems) != 0 {
			t.Fatalf("schema incompatible with itself: %v\n%s", problems, baseline)
		}
	})
}
