package compat

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// maxRefHops bounds a chain of references ($ref to a $ref to ...).
const maxRefHops = 32

// resolve follows the local $ref of a subschema found at loc in doc, and
// returns the subschema it names and that subschema's location. Keywords
// beside the $ref override the target's (an approximation of their "allOf"
// meaning that is exact for annotations). It returns false for a $ref that is
// not local to doc, or that names nothing.
func (c *checker) resolve(doc any, m map[string]any, loc string) (map[string]any, string, bool) {
	for range maxRefHops {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, loc, true
		}
		ptr, ok := localPointer(doc, ref)
		if !ok {
			return m, loc, false
		}
		target, ok := lookup(doc, ptr)
		if !ok {
			return m, loc, false
		}
		merged := asMap(target)
		if siblings := withoutRef(m); len(siblings) > 0 {
			merged = overlay(merged, siblings)
			if !onlyAnnotations(siblings) {
				// The merged subschema lives nowhere; name it by both places.
				ptr += "&" + loc
			}
		}
		m, loc = merged, ptr
	}
	// A chain this long is a cycle or close to one: treat it like any
	// reference that cannot be followed (the caller accepts it only if it
	// is unchanged).
	return m, loc, false
}

// localPointer turns a $ref into a "#/..." pointer into doc: either a bare
// fragment, or the document's own $id followed by a fragment.
func localPointer(doc any, ref string) (string, bool) {
	if root, ok := asMap(doc)["$id"].(string); ok && root != "" {
		if rest, cut := strings.CutPrefix(ref, root); cut {
			ref = rest
		}
	}
	if ref == "" {
		return "#", true
	}
	if !strings.HasPrefix(ref, "#") {
		return "", false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return "", false
	}
	return "#" + frag, true
}

// lookup evaluates the JSON Pointer fragment ptr ("#/a/b") against doc.
func lookup(doc any, ptr string) (any, bool) {
	rest := strings.TrimPrefix(ptr, "#")
	if rest == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(rest[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// escape encodes one JSON Pointer reference token.
func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// asMap views a subschema as an object: true (or an absent schema) is {},
// false is {"not": {}}.
func asMap(v any) map[string]any {
	switch s := v.(type) {
	case map[string]any:
		return s
	case bool:
		if !s {
			return map[string]any{"not": map[string]any{}}
		}
	}
	return map[string]any{}
}

// annotations are keywords that never change which instances validate.
var annotations = []string{
	"title", "description", "examples", "default", "deprecated", "readOnly",
	"writeOnly", "$comment", "contentEncoding", "contentMediaType", "contentSchema",
}

func onlyAnnotations(m map[string]any) bool {
	for k := range m {
		if !slices.Contains(annotations, k) {
			return false
		}
	}
	return true
}

func withoutRef(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

func overlay(base, top map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(top))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range top {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// equal compares two decoded JSON values. Encoding sorts object keys, so
// equal values encode equally.
func equal(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// show renders a decoded JSON value for a message.
func show(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	j, err := json.Marshal(v)
	if err != nil {
		return "(unprintable)"
	}
	return string(j)
}
