// Package compat decides whether a new version of a JSON Schema is backward
// compatible with an earlier one, in both directions that matter for an
// append-only event log: readers built from the new schema must still accept
// data written against the old one (retained events, golden samples), and
// readers built from the old schema must still understand data written against
// the new one (during a rollout).
//
// The check is structural and conservative. It compares the two documents
// keyword by keyword, walking "properties", "items", "additionalProperties",
// "$defs" and "definitions", and following local "$ref"s ("#/..."). It reports:
//
//   - a property, or a definition, that was removed;
//   - a change of "type";
//   - a property added to "required", or removed from it;
//   - an "enum" or "const" that narrows the values allowed before;
//   - a tightened constraint: a "pattern" or "format" added or changed, a
//     minimum raised, a maximum lowered, "multipleOf" added or changed,
//     "uniqueItems" turned on, "additionalProperties" narrowed;
//   - any other assertion keyword ("allOf", "oneOf", "not", "if", ...) added or
//     changed, which it cannot reason about;
//   - a changed "$id" or "$schema", and a "$ref" it cannot follow that changed.
//
// Adding an optional property, widening an enum, and removing or loosening a
// constraint other than "type" are compatible: Argosy's readers must tolerate
// properties and enum values they do not know. Annotations (title,
// description, examples, ...) are ignored.
package compat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Problem is one incompatibility between a baseline schema and its new
// version.
type Problem struct {
	// Path is a JSON Pointer fragment ("#/properties/spec") to the subschema
	// the problem is about, as laid out in the new schema.
	Path string
	// Message says what changed, in lowercase.
	Message string
}

// String formats the problem as "path: message".
func (p Problem) String() string { return p.Path + ": " + p.Message }

// Check compares the JSON Schema current with baseline and returns every
// backward incompatibility it finds, in a stable order (a subschema's own
// keywords, then its properties and definitions by name). It returns an error
// only when either input is not a JSON Schema document (an object or a
// boolean).
func Check(baseline, current []byte) ([]Problem, error) {
	b, err := decode(baseline)
	if err != nil {
		return nil, fmt.Errorf("baseline schema: %w", err)
	}
	c, err := decode(current)
	if err != nil {
		return nil, fmt.Errorf("current schema: %w", err)
	}
	ch := &checker{baseDoc: b, curDoc: c, seen: map[[2]string]bool{}}
	ch.schema("#", b, c, "#", "#")
	return ch.problems, nil
}

// errNotSchema is returned for a document that is neither an object nor a
// boolean.
var errNotSchema = errors.New("not a JSON Schema: want an object or a boolean")

func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: trailing data after the schema")
	}
	switch v.(type) {
	case map[string]any, bool:
		return v, nil
	}
	return nil, errNotSchema
}

// checker accumulates the problems of one comparison.
type checker struct {
	baseDoc, curDoc any
	problems        []Problem
	// seen holds the pairs of locations (one in each document) already
	// compared, so that recursive schemas terminate and a definition reached
	// both through a $ref and under $defs is reported once.
	seen map[[2]string]bool
	// depth is the current nesting, bounded by maxDepth.
	depth int
}

// maxDepth bounds the nesting the checker follows; deeper schemas are
// reported rather than walked.
const maxDepth = 64

func (c *checker) report(path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// schema compares the baseline subschema b with the current subschema n
// found at path. bLoc and nLoc are where each one lives in its own document,
// for reference bookkeeping.
func (c *checker) schema(path string, b, n any, bLoc, nLoc string) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxDepth {
		c.report(path, "nested deeper than %d levels; not checked", maxDepth)
		return
	}
	bm, bLoc, okB := c.resolve(c.baseDoc, asMap(b), bLoc)
	nm, nLoc, okN := c.resolve(c.curDoc, asMap(n), nLoc)
	if !okB || !okN {
		c.unresolved(path, bm, nm)
		return
	}
	key := [2]string{bLoc, nLoc}
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.identity(path, bm, nm)
	c.types(path, bm, nm)
	c.values(path, bm, nm)
	c.bounds(path, bm, nm)
	c.text(path, bm, nm)
	c.required(path, bm, nm)
	c.properties(path, bm, nm, bLoc, nLoc)
	c.children(path, bm, nm, bLoc, nLoc)
	c.definitions(path, bm, nm, bLoc, nLoc)
	c.opaque(path, bm, nm)
}

// unresolved handles a pair of subschemas one of which has a $ref that
// cannot be followed: only an unchanged reference is accepted.
func (c *checker) unresolved(path string, b, n map[string]any) {
	rb, _ := b["$ref"].(string)
	rn, _ := n["$ref"].(string)
	if rb != rn {
		c.report(path, "reference changed from %q to %q and cannot be followed to check it", rb, rn)
	}
}

// identity reports a changed $id or $schema.
func (c *checker) identity(path string, b, n map[string]any) {
	for _, k := range []string{"$schema", "$id"} {
		vb, inB := b[k]
		vn, inN := n[k]
		if inB && (!inN || !equal(vb, vn)) {
			c.report(path, "%s changed from %s to %s", k, show(vb, inB), show(vn, inN))
		}
	}
}
