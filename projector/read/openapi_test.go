package read_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// openAPI returns the one document of /api/v1 (schemas/openapi.yaml) as
// the JSON data model.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(schemas.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.yaml is not valid YAML: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("openapi.yaml as JSON: %v", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		t.Fatalf("openapi.yaml is a %T, want a mapping", doc)
	}
	return m
}

func get2[T any](t *testing.T, v any, path ...string) T {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: not a mapping at %q", path, p)
		}
		if v, ok = m[p]; !ok {
			t.Fatalf("%v: no %q", path, p)
		}
	}
	x, ok := v.(T)
	if !ok {
		t.Fatalf("%v: a %T, want a %T", path, v, x)
	}
	return x
}

// readTags are the tags of the read API's operations; the document's
// other operations are the hub's own.
var readTags = []string{"fleet", "audit", "deployments", "meta"}

// readPaths returns the document's read API operations, by path and
// method.
func readPaths(t *testing.T, doc map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for p, item := range get2[map[string]any](t, doc, "paths") {
		for method, op := range item.(map[string]any) {
			tags, _ := op.(map[string]any)["tags"].([]any)
			if slices.ContainsFunc(tags, func(t any) bool { return slices.Contains(readTags, t.(string)) }) {
				out[p] = append(out[p], method)
			}
		}
	}
	return out
}

// TestOpenAPIStructure checks what every read operation of the document
// must say; the hub's test checks the document as a whole (its validity,
// unique operationIds, every component used).
func TestOpenAPIStructure(t *testing.T) {
	doc := openAPI(t)
	if v := get2[string](t, doc, "openapi"); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi %q, want 3.1.x", v)
	}
	paths := readPaths(t, doc)
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		for _, method := range paths[p] {
			op := get2[map[string]any](t, doc, "paths", p, method)
			responses := get2[map[string]any](t, op, "responses")
			if _, ok := responses["200"]; !ok {
				t.Errorf("%s %s: no 200 response", method, p)
			}
			if _, ok := responses["400"]; !ok && p != "/api/v1/openapi.yaml" {
				t.Errorf("%s %s: no 400 response, though every endpoint refuses unknown parameters", method, p)
			}
			for _, param := range pathParams(p) {
				if !slices.Contains(documentedParams(t, doc, p, method, "path"), param) {
					t.Errorf("%s %s: path parameter %q is not documented", method, p, param)
				}
			}
		}
	}
}

func pathParams(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.Trim(seg, "{}"))
		}
	}
	return out
}

// documentedParams returns the names of an operation's parameters that are
// in "in" (query or path), following $refs.
func documentedParams(t *testing.T, doc map[string]any, path, method, in string) []string {
	t.Helper()
	op := get2[map[string]any](t, doc, "paths", path, method)
	params, _ := op["parameters"].([]any)
	var out []string
	for _, p := range params {
		m := p.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m = get2[map[string]any](t, doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
		}
		if m["in"] == in {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

// TestRoutesDocumented holds the mux's routes and the document's read
// operations (those with a read tag) to the same set.
func TestRoutesDocumented(t *testing.T) {
	var documented []string
	for p, methods := range readPaths(t, openAPI(t)) {
		for _, method := range methods {
			documented = append(documented, strings.ToUpper(method)+" "+p)
		}
	}
	slices.Sort(documented)
	served := read.RoutePatterns()
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("schemas/openapi.yaml documents the read operations\n  %v\nthe handler serves\n  %v", documented, served)
	}
}

// TestQueryParametersDocumented holds each endpoint's accepted query
// parameters and the documented ones to the same set: the 400 for an
// unknown parameter lists what the endpoint accepts.
func TestQueryParametersDocumented(t *testing.T) {
	doc := openAPI(t)
	h := newHandler(readtest.Fleet())
	for p := range readPaths(t, doc) {
		if p == "/api/v1/openapi.yaml" {
			continue
		}
		t.Run(p, func(t *testing.T) {
			target := strings.NewReplacer("{name}", "prod-eu", "{cluster}", "prod-eu").Replace(p)
			rec := get(t, h, http.MethodGet, target+"?zz-unknown=1")
			msg := decode[struct{ Error string }](t, rec.Body.Bytes()).Error
			var accepted []string
			if _, list, ok := strings.Cut(msg, "want one of "); ok {
				accepted = strings.Split(list, ", ")
			} else if !strings.Contains(msg, "takes none") {
				t.Fatalf("status %d: %q", rec.Code, msg)
			}
			documented := documentedParams(t, doc, p, "get", "query")
			slices.Sort(accepted)
			slices.Sort(documented)
			if !slices.Equal(accepted, documented) {
				t.Errorf("accepts %v, documents %v", accepted, documented)
			}
			// Each documented parameter's example is accepted.
			for _, name := range documented {
				ex := paramExample(t, doc, p, name)
				q := url.Values{name: {ex}}
				if name == "label" {
					q.Set("by", "label")
				} else if p == "/api/v1/reports/deployments" && name != "by" {
					q.Set("by", "app")
				}
				if rec := get(t, h, http.MethodGet, target+"?"+q.Encode()); rec.Code != 200 {
					t.Errorf("%s=%s: status %d %s", name, ex, rec.Code, rec.Body)
				}
			}
		})
	}
}

func paramExample(t *testing.T, doc map[string]any, path, name string) string {
	t.Helper()
	for _, p := range get2[map[string]any](t, doc, "paths", path, "get")["parameters"].([]any) {
		m := p.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m = get2[map[string]any](t, doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
		}
		if m["name"] == name {
			switch ex := m["example"].(type) {
			case string:
				return ex
			case json.Number:
				return ex.String()
			}
			t.Fatalf("%s %s: no example", path, name)
		}
	}
	t.Fatalf("%s: no parameter %s", path, name)
	return ""
}

// TestOpenAPIServedAsDocumented serves openapi.yaml: its Content-Type is
// the media type the document declares for it, and the body, read as
// that media type, is what its schema there takes.
func TestOpenAPIServedAsDocumented(t *testing.T) {
	doc := openAPI(t)
	rec := get(t, newHandler(readtest.Fleet()), http.MethodGet, "/api/v1/openapi.yaml")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	ctype := rec.Header().Get("Content-Type")
	content := get2[map[string]any](t, doc, "paths", "/api/v1/openapi.yaml", "get", "responses", "200", "content")
	media, ok := content[ctype].(map[string]any)
	if !ok {
		t.Fatalf("served as %s, documented as %v", ctype, slices.Sorted(maps.Keys(content)))
	}
	j, err := yaml.YAMLToJSON(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	body, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("urn:argosy:read:openapi.yaml:200", media["schema"]); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:argosy:read:openapi.yaml:200")
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(body); err != nil {
		t.Errorf("the served document does not match its documented schema: %v", err)
	}
}
