package compat_test

import (
	"io/fs"
	"testing"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/schemas/internal/compat"
)

// TestSchemasCompatibleWithBaseline holds every current schema to the
// released baseline of its event type. Event types are never removed: a
// baseline without a current schema fails.
func TestSchemasCompatibleWithBaseline(t *testing.T) {
	names, err := fs.Glob(schemas.Baselines(), "*.json")
	if err != nil {
		t.Fatalf("listing baselines: %v", err)
	}
	if len(names) == 0 {
		t.Fatal("no baseline schemas embedded")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			base, err := fs.ReadFile(schemas.Baselines(), name)
			if err != nil {
				t.Fatalf("reading baseline: %v", err)
			}
			cur, err := fs.ReadFile(schemas.Files(), name)
			if err != nil {
				t.Fatalf("event type %s has a released baseline but no current schema; types are never removed, add a new version beside it instead: %v", name, err)
			}
			problems, err := compat.Check(base, cur)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			for _, p := range problems {
				t.Errorf("incompatible with the released baseline: %s", p)
			}
		})
	}
}
