package schemas_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/argosyproj/argosy/schemas"
)

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// schemaTypes returns the event types that have a schema in json/, sorted.
func schemaTypes(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(schemas.Files(), "*.json")
	if err != nil {
		t.Fatalf("listing schemas: %v", err)
	}
	types := make([]string, 0, len(names))
	for _, n := range names {
		types = append(types, strings.TrimSuffix(n, ".json"))
	}
	return types
}

// compile compiles the schema of an event type, asserting formats and
// content encodings so that date-times and base64 are checked too.
func compile(t *testing.T, eventType string) *jsonschema.Schema {
	t.Helper()
	raw, err := schemas.JSON(eventType)
	if err != nil {
		t.Fatalf("JSON(%q): %v", eventType, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("decoding schema %s: %v", eventType, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource(schemas.URL(eventType), doc); err != nil {
		t.Fatalf("adding schema %s: %v", eventType, err)
	}
	sch, err := c.Compile(schemas.URL(eventType))
	if err != nil {
		t.Fatalf("compiling schema %s: %v", eventType, err)
	}
	return sch
}

// decode parses JSON for the validator (which wants json.Number) and for
// walking (a plain any).
func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

func TestSchemasAreValid2020_12(t *testing.T) {
	types := schemaTypes(t)
	if len(types) == 0 {
		t.Fatal("no schemas embedded")
	}
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			compile(t, typ) // validates against the 2020-12 meta-schema
			raw, err := schemas.JSON(typ)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if doc["$schema"] != draft2020 {
				t.Errorf("$schema = %v, want %s", doc["$schema"], draft2020)
			}
			if doc["$id"] != schemas.URL(typ) {
				t.Errorf("$id = %v, want %s", doc["$id"], schemas.URL(typ))
			}
			if got, ok := schemas.TypeFromURL(schemas.URL(typ)); !ok || got != typ {
				t.Errorf("TypeFromURL(URL(%q)) = %q, %v", typ, got, ok)
			}
			for _, k := range []string{"title", "description"} {
				if s, _ := doc[k].(string); s == "" {
					t.Errorf("%s missing", k)
				}
			}
			if doc["type"] != "object" {
				t.Errorf("type = %v, want object", doc["type"])
			}
			walkObjects("#", doc, func(path string, obj map[string]any) {
				if obj["additionalProperties"] != true {
					t.Errorf("%s: additionalProperties = %v, want true (readers tolerate new optional fields)",
						path, obj["additionalProperties"])
				}
				for _, r := range stringsOf(obj["required"]) {
					if _, ok := obj["properties"].(map[string]any)[r]; !ok {
						t.Errorf("%s: required %q is not a property", path, r)
					}
				}
			})
		})
	}
}

// walkObjects calls fn for every subschema that lists properties.
func walkObjects(path string, s any, fn func(string, map[string]any)) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		fn(path, m)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			walkObjects(path+"/properties/"+k, props[k], fn)
		}
	}
	if defs, ok := m["$defs"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(defs)) {
			walkObjects(path+"/$defs/"+k, defs[k], fn)
		}
	}
	walkObjects(path+"/items", m["items"], fn)
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestGoPayloadsMatchSchemas(t *testing.T) {
	all := samples()
	if got, want := slices.Sorted(maps.Keys(all)), schemaTypes(t); !slices.Equal(got, want) {
		t.Fatalf("sample types differ from the schema files in json/:\n samples: %v\n schemas: %v", got, want)
	}
	for _, typ := range schemaTypes(t) {
		sch := compile(t, typ)
		raw, err := schemas.JSON(typ)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, shape := range []struct {
			name  string
			value any
			full  bool
		}{{"full", all[typ].full, true}, {"minimal", all[typ].minimal, false}} {
			t.Run(typ+"/"+shape.name, func(t *testing.T) {
				b, err := json.Marshal(shape.value)
				if err != nil {
					t.Fatalf("marshal: %v", err)
				}
				if err := sch.Validate(decode(t, b)); err != nil {
					t.Fatalf("%s does not validate: %v\n%#v", b, err, err)
				}
				var inst any
				if err := json.Unmarshal(b, &inst); err != nil {
					t.Fatal(err)
				}
				checkKeys(t, "#", doc, doc, inst, shape.full)
			})
		}
	}
}

// checkKeys holds the JSON encoding of a Go value to the schema's property
// lists: a full sample encodes every property and a minimal one exactly the
// required ones, at every level. That pins omitempty to "not required" and
// every encoded field to a declared property.
func checkKeys(t *testing.T, path string, root, s map[string]any, inst any, full bool) {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			t.Fatalf("%s: unexpected $ref %q", path, ref)
		}
		s, _ = root["$defs"].(map[string]any)[name].(map[string]any)
	}
	switch v := inst.(type) {
	case map[string]any:
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return // a free-form object: a spec or a map
		}
		want := stringsOf(s["required"])
		if full {
			want = slices.Collect(maps.Keys(props))
		}
		slices.Sort(want)
		if got := slices.Sorted(maps.Keys(v)); !slices.Equal(got, want) {
			t.Errorf("%s: encoded keys %v, want %v", path, got, want)
		}
		for k, sub := range v {
			if ps, ok := props[k].(map[string]any); ok {
				checkKeys(t, path+"/properties/"+k, root, ps, sub, full)
			}
		}
	case []any:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return
		}
		for _, e := range v {
			checkKeys(t, path+"/items", root, items, e, full)
		}
	}
}

func TestSchemasRejectBadPayloads(t *testing.T) {
	all := samples()
	tests := []struct {
		name      string
		eventType string
		// value is marshalled, then edit (if any) changes the decoded JSON.
		value any
		edit  func(m map[string]any)
	}{
		{
			name:      "missing required spec",
			eventType: "io.argosy.config.application.upserted.v1",
			value:     all["io.argosy.config.application.upserted.v1"].minimal,
			edit:      func(m map[string]any) { delete(m, "spec") },
		},
		{
			name:      "nil json.RawMessage spec encodes as null",
			eventType: "io.argosy.config.application.upserted.v1",
			value:     schemas.ApplicationUpserted{Resource: minResource, Project: "default"},
		},
		{
			name:      "missing generation",
			eventType: "io.argosy.config.appproject.deleted.v1",
			value:     all["io.argosy.config.appproject.deleted.v1"].minimal,
			edit:      func(m map[string]any) { delete(m, "generation") },
		},
		{
			name:      "negative generation",
			eventType: "io.argosy.config.application.deleted.v1",
			value:     schemas.ApplicationDeleted{Resource: schemas.Resource{Cluster: "a", Name: "b", Generation: -1}},
		},
		{
			name:      "cluster not a DNS label",
			eventType: "io.argosy.status.heartbeat.v1",
			value:     schemas.Heartbeat{Cluster: "Prod_EU", AgentVersion: "1", Mode: "managed"},
		},
		{
			name:      "cluster longer than 63",
			eventType: "io.argosy.trust.resync.requested.v1",
			value:     schemas.ResyncRequested{Cluster: strings.Repeat("a", 64), Reason: schemas.ResyncDataLoss},
		},
		{
			name:      "bad heartbeat mode",
			eventType: "io.argosy.status.heartbeat.v1",
			value:     schemas.Heartbeat{Cluster: "a", AgentVersion: "1", Mode: "standalone"},
		},
		{
			name:      "bad operation",
			eventType: "io.argosy.config.operation.requested.v1",
			value:     schemas.OperationRequested{Resource: minResource, RequestID: "r", Operation: "restart"},
		},
		{
			name:      "bad refresh type",
			eventType: "io.argosy.config.operation.requested.v1",
			value: schemas.OperationRequested{Resource: minResource, RequestID: "r", Operation: schemas.OperationRefresh,
				RefreshType: "soft"},
		},
		{
			name:      "bad reject code",
			eventType: "io.argosy.status.config.rejected.v1",
			value:     schemas.ConfigRejected{Resource: minResource, EventID: "e", Code: "denied"},
		},
		{
			name:      "bad query",
			eventType: "io.argosy.query.requested.v1",
			value:     map[string]any{"cluster": "a", "name": "b", "generation": 0, "requestId": "q", "query": "exec", "expiresAt": "2026-01-01T00:00:00Z"},
		},
		{
			name:      "query without expiry",
			eventType: "io.argosy.query.requested.v1",
			value:     map[string]any{"cluster": "a", "name": "b", "generation": 0, "requestId": "q", "query": "tree"},
		},
		{
			name:      "bad answer code",
			eventType: "io.argosy.query.answered.v1",
			value:     schemas.QueryAnswered{Resource: minResource, RequestID: "q", Query: schemas.QueryTree, Code: "nope"},
		},
		{
			name:      "bad resync reason",
			eventType: "io.argosy.trust.resync.requested.v1",
			value:     schemas.ResyncRequested{Cluster: "a", Reason: "bored"},
		},
		{
			name:      "last offset below -1",
			eventType: "io.argosy.trust.resync.requested.v1",
			value:     schemas.ResyncRequested{Cluster: "a", Reason: schemas.ResyncDataLoss, LastOffset: -2},
		},
		{
			name:      "bad repository type",
			eventType: "io.argosy.config.repository.upserted.v1",
			value:     schemas.RepositoryUpserted{Resource: minResource, URL: "svn://x", Type: "svn"},
		},
		{
			name:      "bad audit outcome",
			eventType: "io.argosy.hub.audit.recorded.v1",
			value: schemas.AuditRecorded{RequestID: "r", Actor: "a", Action: "x", Method: "GET", Path: "/",
				Outcome: "ok", StatusCode: 200},
		},
		{
			name:      "bad key role",
			eventType: "io.argosy.trust.key.registered.v1",
			value:     all["io.argosy.trust.key.registered.v1"].full,
			edit:      func(m map[string]any) { m["role"] = "admin" },
		},
		{
			name:      "bad nested key algorithm",
			eventType: "io.argosy.trust.key.rotated.v1",
			value:     all["io.argosy.trust.key.rotated.v1"].full,
			edit:      func(m map[string]any) { m["next"].(map[string]any)["algorithm"] = "rsa" },
		},
		{
			name:      "public key of the wrong length",
			eventType: "io.argosy.trust.key.registered.v1",
			value:     all["io.argosy.trust.key.registered.v1"].full,
			edit:      func(m map[string]any) { m["publicKey"] = "AAAA" },
		},
		{
			name:      "bad purpose",
			eventType: "io.argosy.trust.key.registered.v1",
			value:     all["io.argosy.trust.key.registered.v1"].full,
			edit:      func(m map[string]any) { m["purpose"] = "encryption" },
		},
		{
			name:      "timestamp not RFC 3339",
			eventType: "io.argosy.status.deployment.recorded.v1",
			value:     all["io.argosy.status.deployment.recorded.v1"].minimal,
			edit:      func(m map[string]any) { m["startedAt"] = "14/03/2025 09:26" },
		},
		{
			name:      "nested required field missing",
			eventType: "io.argosy.status.application.changed.v1",
			value:     all["io.argosy.status.application.changed.v1"].full,
			edit:      func(m map[string]any) { delete(m["operation"].(map[string]any), "startedAt") },
		},
		{
			name:      "batch of no deltas",
			eventType: "io.argosy.status.applications.changed.v1",
			value:     schemas.ApplicationStatusBatch{Cluster: "edge-7", Deltas: []schemas.ApplicationStatusChanged{}},
		},
		{
			name:      "batch of more deltas than allowed",
			eventType: "io.argosy.status.applications.changed.v1",
			value: schemas.ApplicationStatusBatch{Cluster: "edge-7",
				Deltas: make([]schemas.ApplicationStatusChanged, schemas.MaxBatchDeltas+1)},
			edit: func(m map[string]any) {
				for _, d := range m["deltas"].([]any) {
					d.(map[string]any)["cluster"], d.(map[string]any)["name"] = "edge-7", "guestbook"
				}
			},
		},
		{
			name:      "batch delta without its name",
			eventType: "io.argosy.status.applications.changed.v1",
			value:     all["io.argosy.status.applications.changed.v1"].minimal,
			edit:      func(m map[string]any) { delete(m["deltas"].([]any)[0].(map[string]any), "name") },
		},
		{
			name:      "label value not a string",
			eventType: "io.argosy.config.cluster.registered.v1",
			value:     all["io.argosy.config.cluster.registered.v1"].full,
			edit:      func(m map[string]any) { m["labels"].(map[string]any)["replicas"] = 3 },
		},
		{
			name:      "negative partition",
			eventType: "io.argosy.config.cluster.registered.v1",
			value:     schemas.ClusterRegistered{Resource: minResource, Partition: ptr(int32(-1))},
		},
		{
			name:      "ciphertext not base64",
			eventType: "io.argosy.config.repository.upserted.v1",
			value:     all["io.argosy.config.repository.upserted.v1"].full,
			edit:      func(m map[string]any) { m["credentials"].(map[string]any)["ciphertext"] = "not base64!" },
		},
		{
			name:      "wrong type",
			eventType: "io.argosy.status.config.applied.v1",
			value:     all["io.argosy.status.config.applied.v1"].full,
			edit:      func(m map[string]any) { m["offset"] = "1203" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if tt.edit != nil {
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				tt.edit(m)
				if b, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := compile(t, tt.eventType).Validate(decode(t, b)); err == nil {
				t.Errorf("%s validated, want a failure", b)
			}
		})
	}
}

func TestBaselineIDs(t *testing.T) {
	names, err := fs.Glob(schemas.Baselines(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		raw, err := fs.ReadFile(schemas.Baselines(), n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if want := schemas.URL(strings.TrimSuffix(n, ".json")); doc["$id"] != want {
			t.Errorf("%s: $id = %v, want %s", n, doc["$id"], want)
		}
	}
}
