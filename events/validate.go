package events

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/argosyproj/argosy/schemas"
)

// compiledSchemas compiles every embedded JSON Schema once per process.
var compiledSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	files := schemas.Files()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	out := make(map[string]*jsonschema.Schema, len(entries))
	for _, ent := range entries {
		typ, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok {
			continue
		}
		raw, err := fs.ReadFile(files, ent.Name())
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", ent.Name(), err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", ent.Name(), err)
		}
		if err := c.AddResource(schemas.URL(typ), doc); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", ent.Name(), err)
		}
		sch, err := c.Compile(schemas.URL(typ))
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", ent.Name(), err)
		}
		out[typ] = sch
	}
	return out, nil
})

// ValidateData checks JSON data against the schema of an event type.
func ValidateData(eventType string, data []byte) error {
	all, err := compiledSchemas()
	if err != nil {
		return err
	}
	sch, ok := all[eventType]
	if !ok {
		return reject(ErrUnknownType, fmt.Errorf("no schema for %q", eventType))
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return reject(ErrSchema, fmt.Errorf("data is not JSON: %w", err))
	}
	if err := sch.Validate(v); err != nil {
		return reject(ErrSchema, err)
	}
	return nil
}
