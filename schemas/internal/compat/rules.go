package compat

import (
	"math"
	"slices"
	"strings"
)

// types reports any change of the "type" keyword. Narrowing breaks readers of
// old data; widening (or dropping it) hands old readers values they cannot
// decode.
func (c *checker) types(path string, b, n map[string]any) {
	tb, tn := typeSet(b), typeSet(n)
	switch {
	case tb == nil && tn == nil:
	case tb == nil:
		c.report(path, "type constraint added: %s", strings.Join(tn, ", "))
	case tn == nil:
		c.report(path, "type constraint removed (was %s)", strings.Join(tb, ", "))
	case !slices.Equal(tb, tn):
		c.report(path, "type changed from %s to %s", strings.Join(tb, ", "), strings.Join(tn, ", "))
	}
}

// typeSet returns the sorted types a subschema allows, or nil when it does not
// say.
func typeSet(m map[string]any) []string {
	var out []string
	switch t := m["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	default:
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// values reports an "enum" or "const" that no longer allows a value the
// baseline allowed. New values are compatible: readers must tolerate values
// they do not know.
func (c *checker) values(path string, b, n map[string]any) {
	vb, okB := allowed(b)
	vn, okN := allowed(n)
	switch {
	case !okN:
	case !okB:
		c.report(path, "values restricted to %s; any value was allowed before", show(vn, true))
	default:
		for _, v := range vb {
			if !slices.ContainsFunc(vn, func(w any) bool { return equal(v, w) }) {
				c.report(path, "value %s no longer allowed", show(v, true))
			}
		}
	}
}

// allowed returns the values a subschema's "const" or "enum" allows, and
// false when it has neither.
func allowed(m map[string]any) ([]any, bool) {
	if v, ok := m["const"]; ok {
		return []any{v}, true
	}
	if e, ok := m["enum"].([]any); ok {
		return e, true
	}
	return nil, false
}

// lower and upper are the numeric keywords whose raising (lower) or lowering
// (upper) rejects data the baseline accepted.
var (
	lower = []string{"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"}
	upper = []string{"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"}
)

// counts are the lower bounds that mean 0 when absent.
var counts = []string{"minLength", "minItems", "minProperties"}

// bounds reports tightened numeric constraints.
func (c *checker) bounds(path string, b, n map[string]any) {
	for _, k := range lower {
		nv, inN := number(n, k)
		bv, inB := number(b, k)
		if !inB && slices.Contains(counts, k) {
			bv, inB = 0, true
		}
		switch {
		case !inN:
		case !inB:
			c.report(path, "%s added: %v", k, nv)
		case nv > bv:
			c.report(path, "%s raised from %v to %v", k, bv, nv)
		}
	}
	for _, k := range upper {
		nv, inN := number(n, k)
		bv, inB := number(b, k)
		switch {
		case !inN:
		case !inB:
			c.report(path, "%s added: %v", k, nv)
		case nv < bv:
			c.report(path, "%s lowered from %v to %v", k, bv, nv)
		}
	}
	if nv, inN := number(n, "multipleOf"); inN {
		bv, inB := number(b, "multipleOf")
		switch {
		case !inB:
			c.report(path, "multipleOf added: %v", nv)
		case nv == 0 || math.Mod(bv, nv) != 0:
			c.report(path, "multipleOf changed from %v to %v, which does not divide it", bv, nv)
		}
	}
	if n["uniqueItems"] == true && b["uniqueItems"] != true {
		c.report(path, "uniqueItems turned on")
	}
}

func number(m map[string]any, k string) (float64, bool) {
	f, ok := m[k].(float64)
	return f, ok
}

// text reports an added or changed "pattern" or "format". Whether one
// regular expression accepts everything another does is not decidable here,
// so any change counts.
func (c *checker) text(path string, b, n map[string]any) {
	for _, k := range []string{"pattern", "format"} {
		vn, inN := n[k]
		vb, inB := b[k]
		switch {
		case !inN:
		case !inB:
			c.report(path, "%s added: %s", k, show(vn, true))
		case !equal(vb, vn):
			c.report(path, "%s changed from %s to %s", k, show(vb, true), show(vn, true))
		}
	}
}

// required reports properties that became required (old data may lack them)
// or stopped being required (old readers may depend on them).
func (c *checker) required(path string, b, n map[string]any) {
	rb, rn := stringSet(b["required"]), stringSet(n["required"])
	for _, p := range rn {
		if !slices.Contains(rb, p) {
			c.report(path, "property %q became required", p)
		}
	}
	for _, p := range rb {
		if !slices.Contains(rn, p) {
			c.report(path, "property %q is no longer required; readers of the baseline may depend on it", p)
		}
	}
}

func stringSet(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// properties reports removed properties and compares the ones kept. A new
// property is compatible, unless the baseline described unlisted properties
// with a schema, in which case the new property must accept what that schema
// accepted.
func (c *checker) properties(path string, b, n map[string]any, bLoc, nLoc string) {
	pb, _ := b["properties"].(map[string]any)
	pn, _ := n["properties"].(map[string]any)
	for _, name := range sortedKeys(pb) {
		seg := "/properties/" + escape(name)
		sn, ok := pn[name]
		if !ok {
			c.report(path, "property %q removed", name)
			continue
		}
		c.schema(path+seg, pb[name], sn, bLoc+seg, nLoc+seg)
	}
	extra, ok := b["additionalProperties"].(map[string]any)
	if !ok {
		return
	}
	for _, name := range sortedKeys(pn) {
		if _, old := pb[name]; old {
			continue
		}
		seg := "/properties/" + escape(name)
		c.schema(path+seg, extra, pn[name], bLoc+"/additionalProperties", nLoc+seg)
	}
}

// children compares "items" and "additionalProperties". Loosening either one
// (dropping it, or turning it to true) is compatible.
func (c *checker) children(path string, b, n map[string]any, bLoc, nLoc string) {
	for _, k := range []string{"items", "additionalProperties"} {
		vb, inB := b[k]
		vn, inN := n[k]
		_, arrB := vb.([]any)
		_, arrN := vn.([]any)
		switch {
		case arrB || arrN:
			c.opaqueKey(path, k, vb, vn, inB, inN)
		case vn == false && vb != false:
			c.report(path, "%s turned to false: values it allowed before are rejected now", k)
		case vb == false, !inN, vn == true:
		default:
			c.schema(path+"/"+k, vb, vn, bLoc+"/"+k, nLoc+"/"+k)
		}
	}
}

// definitions reports removed definitions and compares the ones kept.
func (c *checker) definitions(path string, b, n map[string]any, bLoc, nLoc string) {
	for _, k := range []string{"$defs", "definitions"} {
		db, _ := b[k].(map[string]any)
		dn, _ := n[k].(map[string]any)
		for _, name := range sortedKeys(db) {
			seg := "/" + k + "/" + escape(name)
			sn, ok := dn[name]
			if !ok {
				c.report(path, "definition %q removed from %s", name, k)
				continue
			}
			c.schema(path+seg, db[name], sn, bLoc+seg, nLoc+seg)
		}
	}
}

// opaqueKeywords are assertions and applicators the checker does not reason
// about: adding or changing one is reported, removing one is compatible.
var opaqueKeywords = []string{
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"dependentRequired", "dependentSchemas", "dependencies",
	"patternProperties", "propertyNames", "prefixItems", "additionalItems",
	"contains", "minContains", "maxContains",
	"unevaluatedProperties", "unevaluatedItems",
	"$dynamicRef", "$recursiveRef",
}

func (c *checker) opaque(path string, b, n map[string]any) {
	for _, k := range opaqueKeywords {
		vb, inB := b[k]
		vn, inN := n[k]
		c.opaqueKey(path, k, vb, vn, inB, inN)
	}
}

func (c *checker) opaqueKey(path, k string, vb, vn any, inB, inN bool) {
	switch {
	case !inN:
	case !inB:
		c.report(path, "%s added; whether it narrows the schema is not checked", k)
	case !equal(vb, vn):
		c.report(path, "%s changed; whether it narrows the schema is not checked", k)
	}
}
