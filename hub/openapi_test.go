package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kgo"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
	"github.com/argosyproj/argosy/schemas"
)

// decodeDoc returns an OpenAPI document, YAML or JSON, as the JSON data
// model (numbers as json.Number).
func decodeDoc(t *testing.T, name string, b []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("%s as JSON: %v", name, err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		t.Fatalf("%s is a %T, want a mapping", name, doc)
	}
	return m
}

// openAPIDoc is the one document of /api/v1 (schemas.OpenAPI), as the
// hub serves it at /openapi.json.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := hub.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	return decodeDoc(t, "openapi.json", b)
}

// readTags are the tags of the read API's operations; every other
// operation is the hub's own.
var readTags = []string{"fleet", "audit", "deployments", "meta"}

// hubOwn reports whether an operation is the hub's own rather than the
// read API's, which the hub mounts: the read API's test holds its
// handler's routes to the operations with a read tag.
func hubOwn(o operation) bool {
	tags, _ := o.op["tags"].([]any)
	return !slices.ContainsFunc(tags, func(t any) bool { return slices.Contains(readTags, t.(string)) })
}

// operation is one documented operation.
type operation struct {
	method, path string
	op           map[string]any
}

func (o operation) String() string { return strings.ToUpper(o.method) + " " + o.path }

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations lists a document's operations by path and method.
func operations(doc map[string]any) []operation {
	paths, _ := doc["paths"].(map[string]any)
	var out []operation
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item, _ := paths[p].(map[string]any)
		for _, m := range httpMethods {
			if op, ok := item[m].(map[string]any); ok {
				out = append(out, operation{method: m, path: p, op: op})
			}
		}
	}
	return out
}

// pointer evaluates a JSON Pointer ("/a/b") against doc.
func pointer(doc any, ptr string) (any, bool) {
	cur := doc
	if ptr == "" {
		return cur, true
	}
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

var escape = strings.NewReplacer("~", "~0", "/", "~1").Replace

// opPointer is the JSON Pointer of an operation in its document.
func opPointer(o operation) string { return "/paths/" + escape(o.path) + "/" + o.method }

// deref follows a local $ref, returning the object and its pointer.
func deref(t *testing.T, doc map[string]any, v any, ptr string) (map[string]any, string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: a %T, want a mapping", ptr, v)
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, ptr
	}
	ptr = strings.TrimPrefix(ref, "#")
	target, ok := pointer(doc, ptr)
	if !ok {
		t.Fatalf("$ref %s resolves to nothing", ref)
	}
	return deref(t, doc, target, ptr)
}

// param is one of an operation's parameters, $ref followed.
type param struct {
	name, in string
	ptr      string // of the parameter object
	required bool
	example  any
}

func params(t *testing.T, doc map[string]any, o operation) []param {
	t.Helper()
	list, _ := o.op["parameters"].([]any)
	var out []param
	for i, p := range list {
		m, ptr := deref(t, doc, p, fmt.Sprintf("%s/parameters/%d", opPointer(o), i))
		req, _ := m["required"].(bool)
		out = append(out, param{name: m["name"].(string), in: m["in"].(string), ptr: ptr, required: req, example: m["example"]})
	}
	return out
}

// security returns the security requirements that apply to an operation.
func security(doc map[string]any, o operation) []any {
	if s, ok := o.op["security"]; ok {
		return s.([]any)
	}
	s, _ := doc["security"].([]any)
	return s
}

// validator checks JSON values against schemas of a document, which are
// JSON Schema 2020-12 in OpenAPI 3.1.
type validator struct {
	doc map[string]any
	c   *jsonschema.Compiler
}

const docURL = "urn:argosy:hub:openapi.json"

func newValidator(t *testing.T, doc map[string]any) *validator {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	return &validator{doc: doc, c: c}
}

// validate checks v against the schema at ptr.
func (v *validator) validate(t *testing.T, ptr string, inst any) error {
	t.Helper()
	s, err := v.c.Compile(docURL + "#" + ptr)
	if err != nil {
		t.Fatalf("compiling %s: %v", ptr, err)
	}
	return s.Validate(inst)
}

// responseSchema returns the pointer of the application/json schema of
// an operation's answer with status, if it has one, and whether the
// status is documented.
func (v *validator) responseSchema(t *testing.T, o operation, status int) (ptr string, documented bool) {
	t.Helper()
	r, ok := o.op["responses"].(map[string]any)[fmt.Sprint(status)]
	if !ok {
		return "", false
	}
	_, rptr := deref(t, v.doc, r, fmt.Sprintf("%s/responses/%d", opPointer(o), status))
	ptr = rptr + "/content/application~1json/schema"
	if _, ok := pointer(v.doc, ptr); !ok {
		return "", true
	}
	return ptr, true
}

// strictDecode decodes a JSON value into out as the hub does a request
// body: no unknown field.
func strictDecode(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// TestOpenAPIValidAgainstSpec validates the one document, as the hub
// serves it, against the official OpenAPI 3.1 JSON Schema.
func TestOpenAPIValidAgainstSpec(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sch, err := toolcache.OpenAPI31Schema(ctx)
	if err != nil {
		t.Fatalf("cannot get the official OpenAPI 3.1 JSON Schema: %v", err)
	}
	if err := sch.Validate(any(openAPIDoc(t))); err != nil {
		t.Errorf("schemas/openapi.yaml is not a valid OpenAPI 3.1 document:\n%#v", err)
	}
}

// TestOpenAPIHasNoNull finds what the OpenAPI 3.1 schema lets through: a
// null where YAML cut a flow mapping short at an unquoted comma
// ("description: A, b." reads as a description and a key "b." without a
// value), which serves a half sentence and a junk key.
func TestOpenAPIHasNoNull(t *testing.T) {
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case nil:
			t.Errorf("%s is null: quote the text that holds a comma", path)
		case map[string]any:
			for k, e := range v {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	walk("", openAPIDoc(t))
}

// serverRoutes are the routes the hub serves beside its API.
var serverRoutes = []string{"GET /openapi.json", "GET /healthz", "GET /readyz", joinRoute}

// joinRoute takes a join token, not a bearer token, and writes no object a
// caller names: it has neither an Idempotency-Key nor a dry run.
const joinRoute = "POST /api/v1/clusters/{name}/join"

// TestRoutesDocumented holds the routes the hub serves and the document's
// operations to the same set: the hub's own routes and its server routes
// are the operations without a read tag; the read API's test holds its
// handler's routes, which the hub mounts, to the rest. An operation has
// one tag.
func TestRoutesDocumented(t *testing.T) {
	own := slices.Clone(serverRoutes)
	for _, r := range hub.Routes() {
		own = append(own, r[0]+" "+r[1])
	}
	var documented []string
	for _, o := range operations(openAPIDoc(t)) {
		if tags, _ := o.op["tags"].([]any); len(tags) != 1 {
			t.Errorf("%s: tags %v, want one", o, tags)
		}
		if hubOwn(o) {
			documented = append(documented, o.String())
		}
	}
	slices.Sort(documented)
	want := slices.Sorted(slices.Values(own))
	if !slices.Equal(documented, want) {
		t.Errorf("schemas/openapi.yaml documents\n  %v\nas the hub's own, which serves\n  %v", documented, want)
	}
}

// TestOpenAPIOperations checks what every operation of the hub's own
// must say, unique operationIds, and the bearer token on every /api/v1
// operation.
func TestOpenAPIOperations(t *testing.T) {
	doc := openAPIDoc(t)
	ids := map[string]bool{}
	for _, o := range operations(doc) {
		if id, _ := o.op["operationId"].(string); ids[id] {
			t.Errorf("%s: operationId %q used twice", o, id)
		} else {
			ids[id] = true
		}
		if !hubOwn(o) {
			continue
		}
		for _, f := range []string{"operationId", "summary", "description"} {
			if s, _ := o.op[f].(string); s == "" {
				t.Errorf("%s: no %s", o, f)
			}
		}
		if _, ok := o.op["responses"].(map[string]any)["200"]; !ok {
			t.Errorf("%s: no 200 response", o)
		}
		checkPathParams(t, doc, o)
		if o.method != "get" && o.String() != joinRoute {
			checkWrite(t, doc, o)
		}
	}
	for _, o := range operations(doc) {
		sec := security(doc, o)
		if !strings.HasPrefix(o.path, "/api/v1/") || o.String() == joinRoute {
			if len(sec) != 0 {
				t.Errorf("%s: needs a token, but the hub serves it to anyone", o)
			}
			continue
		}
		if want := []any{map[string]any{"bearer": []any{}}}; !reflect.DeepEqual(sec, want) {
			t.Errorf("%s: security %v, want the bearer token", o, sec)
		}
		for _, status := range []string{"401", "403", "503"} {
			if _, ok := o.op["responses"].(map[string]any)[status]; !ok {
				t.Errorf("%s: no %s response, which the hub gives before serving any /api/v1 call", o, status)
			}
		}
	}
	// Every component is used.
	raw, err := hub.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"schemas", "parameters", "responses"} {
		comps, _ := pointer(doc, "/components/"+kind)
		for name := range comps.(map[string]any) {
			if !bytes.Contains(raw, []byte(`"#/components/`+kind+`/`+name+`"`)) {
				t.Errorf("components.%s.%s is never referenced", kind, name)
			}
		}
	}
}

// checkPathParams holds a path's template and its documented path
// parameters to the same names.
func checkPathParams(t *testing.T, doc map[string]any, o operation) {
	t.Helper()
	var template, documented []string
	for _, seg := range strings.Split(o.path, "/") {
		if strings.HasPrefix(seg, "{") {
			template = append(template, strings.Trim(seg, "{}"))
		}
	}
	for _, p := range params(t, doc, o) {
		if p.in == "path" {
			documented = append(documented, p.name)
			if !p.required {
				t.Errorf("%s: path parameter %s is not required", o, p.name)
			}
		}
	}
	slices.Sort(template)
	slices.Sort(documented)
	if !slices.Equal(template, documented) {
		t.Errorf("%s: path parameters %v documented, the path has %v", o, documented, template)
	}
}

// checkWrite checks that a write documents the headers and query of every
// write, and a single-object delete If-Match and its conflict.
func checkWrite(t *testing.T, doc map[string]any, o operation) {
	t.Helper()
	has := map[string]bool{}
	for _, p := range params(t, doc, o) {
		has[p.in+" "+p.name] = true
	}
	want := []string{"header " + api.HeaderIdempotencyKey, "query dryRun"}
	if o.method == "delete" {
		want = append(want, "header "+api.HeaderIfMatch)
	}
	for _, w := range want {
		if !has[w] {
			t.Errorf("%s: no %s parameter", o, w)
		}
	}
	responses := o.op["responses"].(map[string]any)
	for _, status := range []string{"200", "400", "401", "403", "409", "503"} {
		if _, ok := responses[status]; !ok {
			t.Errorf("%s: no %s response", o, status)
		}
	}
	if strings.Contains(o.path, "}/") {
		if _, ok := responses["404"]; !ok {
			t.Errorf("%s: no 404 response for an unknown cluster or object", o)
		}
	}
	r, _ := deref(t, doc, responses["200"], "")
	if ref, _ := pointer(r, "/content/application~1json/schema/$ref"); ref != "#/components/schemas/Result" {
		t.Errorf("%s: the 200 answer is %v, want a Result", o, ref)
	}
}

// schemaOf names the schema of each type of hub/api's types.go.
var schemaOf = map[string]struct {
	schema string
	typ    reflect.Type
}{
	"ApplyRequest":      {"ApplyRequest", reflect.TypeFor[api.ApplyRequest]()},
	"ClusterRequest":    {"ClusterRequest", reflect.TypeFor[api.ClusterRequest]()},
	"RepositoryRequest": {"RepositoryRequest", reflect.TypeFor[api.RepositoryRequest]()},
	"SealedCredentials": {"SealedCredentials", reflect.TypeFor[api.SealedCredentials]()},
	"OperationRequest":  {"OperationRequest", reflect.TypeFor[api.OperationRequest]()},
	"Result":            {"Result", reflect.TypeFor[api.Result]()},
	"Written":           {"Written", reflect.TypeFor[api.Written]()},
	"Object":            {"Object", reflect.TypeFor[api.Object]()},
	"ObjectList":        {"ObjectList", reflect.TypeFor[api.ObjectList]()},
	"Identity":          {"Identity", reflect.TypeFor[api.Identity]()},
	"PlacementRequest":  {"PlacementRequest", reflect.TypeFor[api.PlacementRequest]()},
	"SourceCommit":      {"SourceCommit", reflect.TypeFor[api.SourceCommit]()},
	"Placement":         {"Placement", reflect.TypeFor[api.Placement]()},
	"PlacedCluster":     {"PlacedCluster", reflect.TypeFor[api.PlacedCluster]()},
	"PlacementList":     {"PlacementList", reflect.TypeFor[api.PlacementList]()},
	"JoinRequest":       {"JoinRequest", reflect.TypeFor[api.JoinRequest]()},
	"Error":             {"Error", reflect.TypeFor[api.Error]()},
	"FieldError":        {"FieldError", reflect.TypeFor[api.FieldError]()},
	"LiveAnswer":        {"LiveAnswer", reflect.TypeFor[api.LiveAnswer]()},
}

// TestSchemasMatchTypes holds each type of hub/api's types.go and its
// schema to the same JSON fields, the fields a client may omit being the
// ones the schema does not require.
func TestSchemasMatchTypes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "api/types.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
					types = append(types, ts.Name.Name)
				}
			}
		}
	}
	if got, want := slices.Sorted(slices.Values(types)), slices.Sorted(maps.Keys(schemaOf)); !slices.Equal(got, want) {
		t.Fatalf("hub/api/types.go has types %v, the test knows the schemas of %v", got, want)
	}
	doc := openAPIDoc(t)
	for name, s := range schemaOf {
		sch, ok := pointer(doc, "/components/schemas/"+s.schema)
		if !ok {
			t.Errorf("%s: no schema %s", name, s.schema)
			continue
		}
		props, _ := sch.(map[string]any)["properties"].(map[string]any)
		var required []string
		req, _ := sch.(map[string]any)["required"].([]any)
		for _, r := range req {
			required = append(required, r.(string))
		}
		var fields, mandatory []string
		for i := range s.typ.NumField() {
			tag := s.typ.Field(i).Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			fields = append(fields, name)
			if opts != "omitempty" {
				mandatory = append(mandatory, name)
			}
		}
		if got, want := slices.Sorted(maps.Keys(props)), slices.Sorted(slices.Values(fields)); !slices.Equal(got, want) {
			t.Errorf("%s: schema properties %v, JSON fields %v", name, got, want)
		}
		if got, want := slices.Sorted(slices.Values(required)), slices.Sorted(slices.Values(mandatory)); !slices.Equal(got, want) {
			t.Errorf("%s: schema requires %v, the fields never omitted are %v", name, got, want)
		}
	}
}

// requestOf is the type each write's body decodes into.
var requestOf = map[string]func() any{
	"registerCluster":  func() any { return new(api.ClusterRequest) },
	"applyApplication": func() any { return new(api.ApplyRequest) },
	"applyAppProject":  func() any { return new(api.ApplyRequest) },
	"requestOperation": func() any { return new(api.OperationRequest) },
	"putRepository":    func() any { return new(api.RepositoryRequest) },
	"joinCluster":      func() any { return new(api.JoinRequest) },
	"applyPlacement":   func() any { return new(api.PlacementRequest) },
}

// TestOpenAPIExamples checks every example of the document against
// its schema, and that the hub's Go types take the request and answer
// examples as they are.
func TestOpenAPIExamples(t *testing.T) {
	doc := openAPIDoc(t)
	v := newValidator(t, doc)
	for _, o := range operations(doc) {
		for _, p := range params(t, doc, o) {
			if p.example == nil {
				continue
			}
			if err := v.validate(t, p.ptr+"/schema", p.example); err != nil {
				t.Errorf("%s: example of parameter %s: %#v", o, p.name, err)
			}
		}
		if _, ok := o.op["requestBody"]; ok {
			id := o.op["operationId"].(string)
			newReq, ok := requestOf[id]
			if !ok {
				t.Errorf("%s: the test knows no request type of %s", o, id)
				continue
			}
			n := checkExamples(t, v, opPointer(o)+"/requestBody/content/application~1json", newReq)
			if n == 0 {
				t.Errorf("%s: no example of the request body", o)
			}
		}
		for status, r := range o.op["responses"].(map[string]any) {
			_, ptr := deref(t, doc, r, opPointer(o)+"/responses/"+status)
			var newResp func() any
			if status == "200" && o.method != "get" {
				newResp = func() any { return new(api.Result) }
			}
			checkExamples(t, v, ptr+"/content/application~1json", newResp)
		}
	}
}

// checkExamples validates the examples of a media type object against its
// schema, and decodes each into a value of newV, if given. It returns how
// many it checked.
func checkExamples(t *testing.T, v *validator, media string, newV func() any) int {
	t.Helper()
	m, ok := pointer(v.doc, media)
	if !ok {
		return 0
	}
	examples, _ := m.(map[string]any)["examples"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		ex, _ := deref(t, v.doc, examples[name], media+"/examples/"+name)
		value := ex["value"]
		if err := v.validate(t, media+"/schema", value); err != nil {
			t.Errorf("%s example %s: %#v", media, name, err)
		}
		if newV != nil {
			if err := strictDecode(value, newV()); err != nil {
				t.Errorf("%s example %s does not decode as the hub does: %v", media, name, err)
			}
		}
	}
	return len(examples)
}

// newServer returns a hub that is never run: its routes answer what needs
// no log.
func newServer(t *testing.T) *hub.Server {
	t.Helper()
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := auth.NewToken("root", auth.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.New([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:9")}, signer, []events.Key{events.HubAnchor("hub", signer.Public())},
		[]auth.Token{tok}, hub.WithListen("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestServedOpenAPI checks that /openapi.json serves schemas/openapi.yaml
// as JSON: the same document the read API serves as YAML.
func TestServedOpenAPI(t *testing.T) {
	want, err := yaml.YAMLToJSON(schemas.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	newServer(t).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("GET /openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Error("GET /openapi.json does not serve openapi.json")
	}
}
