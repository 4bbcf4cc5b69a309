package read_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator checks response bodies against the schemas openapi.yaml gives
// for the operation and status, which are JSON Schema 2020-12 in OpenAPI 3.1.
type validator struct {
	doc map[string]any
	c   *jsonschema.Compiler

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
}

const docURL = "urn:argosy:read:openapi.json"

func newValidator(t *testing.T) *validator {
	t.Helper()
	doc := openAPI(t)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	return &validator{doc: doc, c: c, schemas: map[string]*jsonschema.Schema{}}
}

// template returns the documented path that a request path matches.
func (v *validator) template(t *testing.T, path string) string {
	t.Helper()
	segs := strings.Split(path, "/")
	for _, p := range slices.Sorted(maps.Keys(v.doc["paths"].(map[string]any))) {
		tsegs := strings.Split(p, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		ok := true
		for i := range tsegs {
			if tsegs[i] != segs[i] && !strings.HasPrefix(tsegs[i], "{") {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
	t.Fatalf("%s matches no documented path", path)
	return ""
}

// schema compiles the schema of an operation's response.
func (v *validator) schema(t *testing.T, method, path string, status int) *jsonschema.Schema {
	t.Helper()
	esc := strings.NewReplacer("~", "~0", "/", "~1").Replace
	ptr := fmt.Sprintf("/paths/%s/%s/responses/%d", esc(path), strings.ToLower(method), status)
	resp, ok := pointer(v.doc, ptr)
	if !ok {
		t.Fatalf("%s %s: status %d is not documented", method, path, status)
	}
	if ref, ok := resp.(map[string]any)["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
	}
	ptr += "/content/application~1json/schema"
	if _, ok := pointer(v.doc, ptr); !ok {
		t.Fatalf("%s %s %d: no application/json schema at %s", method, path, status, ptr)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.schemas[ptr]; ok {
		return s
	}
	s, err := v.c.Compile(docURL + "#" + ptr)
	if err != nil {
		t.Fatalf("compiling %s: %v", ptr, err)
	}
	v.schemas[ptr] = s
	return s
}

// response checks the body of a GET's response against its documented
// schema.
func (v *validator) response(t *testing.T, target string, status int, body []byte) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	s := v.schema(t, http.MethodGet, v.template(t, u.EscapedPath()), status)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, body)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("GET %s: the %d response does not match openapi.yaml:\n%v\n%s", target, status, err, body)
	}
}

// pointer evaluates a JSON Pointer ("/a/b") against doc.
func pointer(doc any, ptr string) (any, bool) {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}
