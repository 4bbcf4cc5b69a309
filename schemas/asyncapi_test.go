package schemas_test

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/internal/testenv/toolcache"
	"github.com/argosyproj/argosy/schemas"
)

// The official AsyncAPI 3.0.0 JSON Schema, from the npm package the AsyncAPI
// initiative publishes it in. The "-without-$id" variant resolves every
// reference inside the file, so validation needs no network.
const (
	specsPackage = "@asyncapi/specs"
	specsVersion = "6.11.1"
	specsFile    = "schemas/3.0.0-without-$id.json"
)

// payloadFormat is the schemaFormat of every event message's payload: the
// payloads are JSON Schema 2020-12 documents, a format AsyncAPI 3.0.0 allows
// as a custom value.
const payloadFormat = "application/schema+json;version=draft-2020-12"

// asyncAPI returns the AsyncAPI document decoded from YAML, as the JSON
// data model.
func asyncAPI(t *testing.T) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(schemas.AsyncAPI)
	if err != nil {
		t.Fatalf("asyncapi.yaml is not valid YAML: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("asyncapi.yaml as JSON: %v", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		t.Fatalf("asyncapi.yaml is a %T, want a mapping", doc)
	}
	return m
}

func TestAsyncAPIValidAgainstSpec(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sch, err := toolcache.NPMJSONSchema(ctx, specsPackage, specsVersion, specsFile)
	if err != nil {
		t.Fatalf("cannot get the official AsyncAPI 3.0.0 JSON Schema: %v", err)
	}
	if err := sch.Validate(any(asyncAPI(t))); err != nil {
		t.Fatalf("asyncapi.yaml is not a valid AsyncAPI 3.0.0 document:\n%#v", err)
	}
}

// TestAsyncAPIRefsResolve checks every $ref offline: local ones point at
// something in the document, the others at an embedded schema file whose $id
// matches.
func TestAsyncAPIRefsResolve(t *testing.T) {
	doc := asyncAPI(t)
	n := 0
	walkRefs("#", doc, func(at, ref string) {
		n++
		if strings.HasPrefix(ref, "#/") {
			if _, ok := pointer(doc, ref); !ok {
				t.Errorf("%s: $ref %q points at nothing", at, ref)
			}
			return
		}
		name, ok := strings.CutPrefix(ref, "./json/")
		if !ok {
			t.Errorf("%s: $ref %q is neither local nor ./json/<type>.json", at, ref)
			return
		}
		if _, err := fs.Stat(schemas.Files(), name); err != nil {
			t.Errorf("%s: $ref %q: %v", at, ref, err)
		}
	})
	if n == 0 {
		t.Fatal("no $ref found")
	}
}

func walkRefs(at string, v any, fn func(at, ref string)) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			fn(at, ref)
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walkRefs(at+"/"+k, v[k], fn)
		}
	case []any:
		for i, e := range v {
			walkRefs(at+"/"+strconv.Itoa(i), e, fn)
		}
	}
}

// pointer evaluates a "#/a/b" JSON Pointer against doc.
func pointer(doc any, ref string) (any, bool) {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
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

// TestAsyncAPIMessagesMatchSchemaFiles checks that every schema file is the
// payload of exactly one message named after its event type, placed in one
// channel, with the CloudEvents headers and a Kafka key.
func TestAsyncAPIMessagesMatchSchemaFiles(t *testing.T) {
	doc := asyncAPI(t)
	messages := get[map[string]any](t, doc, "components", "messages")
	var names []string
	for _, id := range slices.Sorted(maps.Keys(messages)) {
		msg := get[map[string]any](t, messages, id)
		name := get[string](t, msg, "name")
		if !strings.HasPrefix(name, "io.argosy.") {
			continue // the dead letter message
		}
		names = append(names, name)
		if got := get[string](t, msg, "payload", "schemaFormat"); got != payloadFormat {
			t.Errorf("%s: payload schemaFormat %q, want %q", id, got, payloadFormat)
		}
		if got, want := get[string](t, msg, "payload", "schema", "$ref"), "./json/"+name+".json"; got != want {
			t.Errorf("%s: payload $ref %q, want %q", id, got, want)
		}
		traits := get[[]any](t, msg, "traits")
		var refs []string
		for _, tr := range traits {
			refs = append(refs, get[string](t, tr.(map[string]any), "$ref"))
		}
		if !slices.Contains(refs, "#/components/messageTraits/cloudEvent") {
			t.Errorf("%s: traits %v lack the cloudEvent headers", id, refs)
		}
		if len(refs) != 2 {
			t.Errorf("%s: traits %v, want the headers and one key trait", id, refs)
		}
		// A config event about an object is also copied to the
		// desired-state topic; every other message has one channel.
		c := channelsOf(t, doc, id)
		if ok := len(c) == 1 || slices.Equal(c, []string{"config", "desired"}); !ok {
			t.Errorf("%s: in channels %v, want exactly one (or config and desired)", id, c)
		}
	}
	slices.Sort(names)
	if want := schemaTypes(t); !slices.Equal(names, want) {
		t.Errorf("message names differ from the schema files:\n messages: %v\n schemas:  %v", names, want)
	}
}

func channelsOf(t *testing.T, doc map[string]any, messageID string) []string {
	t.Helper()
	var out []string
	channels := get[map[string]any](t, doc, "channels")
	for _, ch := range slices.Sorted(maps.Keys(channels)) {
		msgs := get[map[string]any](t, channels, ch, "messages")
		for _, m := range msgs {
			if get[string](t, m.(map[string]any), "$ref") == "#/components/messages/"+messageID {
				out = append(out, ch)
			}
		}
	}
	return out
}

// TestAsyncAPIHeaders pins the header names events carry on Kafka.
func TestAsyncAPIHeaders(t *testing.T) {
	doc := asyncAPI(t)
	headers := get[map[string]any](t, doc, "components", "messageTraits", "cloudEvent", "headers")
	wantRequired := []string{
		"ce_specversion", "ce_id", "ce_source", "ce_type", "ce_time",
		"ce_partitionkey", "ce_signedextattrs", "content-type",
	}
	if got := stringsOf(headers["required"]); !slices.Equal(got, wantRequired) {
		t.Errorf("required headers %v, want %v", got, wantRequired)
	}
	// ce_subject is required of some types only (events'
	// TestAsyncAPISubjectAsDecoded holds that to the decoder), and so is
	// ce_dataschema; ce_sig or ce_dssematerial is the signature (events'
	// TestAsyncAPISignatureForms).
	allOf := get[[]any](t, headers, "allOf")
	if len(allOf) != 3 {
		t.Fatalf("headers allOf has %d conditions, want 3", len(allOf))
	}
	if got := stringsOf(get[map[string]any](t, allOf[0].(map[string]any), "then")["required"]); !slices.Equal(got, []string{"ce_subject"}) {
		t.Errorf("the conditional headers require %v, want [ce_subject]", got)
	}
	props := get[map[string]any](t, headers, "properties")
	if got, want := slices.Sorted(maps.Keys(props)), slices.Sorted(slices.Values(append(wantRequired, "ce_subject", "ce_dataschema", "ce_sig", "ce_dssematerial", "ce_traceparent", "ce_tracestate", "ce_idempotencykey", "ce_requestdigest"))); !slices.Equal(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	dlq := get[map[string]any](t, doc, "components", "messages", "deadLetter", "headers")
	wantDLQ := []string{"argosy_dlq_reason", "argosy_dlq_error", "argosy_dlq_topic", "argosy_dlq_partition", "argosy_dlq_offset", "argosy_dlq_time"}
	if got := stringsOf(dlq["required"]); !slices.Equal(got, wantDLQ) {
		t.Errorf("dead letter headers %v, want %v", got, wantDLQ)
	}
}

// get walks keys down a decoded document and asserts the type found there.
func get[T any](t *testing.T, m map[string]any, keys ...string) T {
	t.Helper()
	var cur any = m
	for i, k := range keys {
		obj, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is a %T, not a mapping", strings.Join(keys[:i], "."), cur)
		}
		if cur, ok = obj[k]; !ok {
			t.Fatalf("%s missing", strings.Join(keys[:i+1], "."))
		}
	}
	v, ok := cur.(T)
	if !ok {
		var zero T
		t.Fatalf("%s is a %T, want %T", strings.Join(keys, "."), cur, zero)
	}
	return v
}
