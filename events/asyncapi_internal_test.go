package events

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events/internal/golden"
	"github.com/argosyproj/argosy/schemas"
)

// TestAsyncAPISubjectAsDecoded holds the AsyncAPI document's headers to
// the decoder: for every type of the catalogue, the document requires
// ce_subject exactly when the decoder refuses an event without one as
// malformed, and accepts the headers with it either way.
func TestAsyncAPISubjectAsDecoded(t *testing.T) {
	headers := asyncAPIHeaders(t)
	d, err := NewDecoder(NewVerifier(NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, sp := range Catalogue() {
		t.Run(sp.Type, func(t *testing.T) {
			e := event.New()
			e.SetType(sp.Type)
			e.SetTime(now)
			if err := e.SetData(event.ApplicationJSON, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			err := d.checkEnvelope(&e, &Decoded{Spec: sp, LogTime: now})
			decoderWants := errors.Is(err, ErrMalformed)
			if err != nil && !decoderWants {
				t.Fatalf("checkEnvelope without a subject: %v", err)
			}
			h := map[string]any{"ce_specversion": "1.0", "ce_id": "id-1", "ce_source": "//argosy.dev/test", "ce_type": sp.Type,
				"ce_time": now.UTC().Format(time.RFC3339), "ce_dataschema": sp.SchemaURL(), "ce_partitionkey": "c1",
				"ce_dssematerial": "ZW52ZWxvcGU=", "ce_signedextattrs": "partitionkey", "content-type": event.ApplicationJSON}
			docWants := headers.Validate(h) != nil
			if docWants != decoderWants {
				t.Errorf("without ce_subject: asyncapi.yaml refuses it %v, the decoder %v (%v)", docWants, decoderWants, err)
			}
			h["ce_subject"] = "clusters/c1"
			if err := headers.Validate(h); err != nil {
				t.Errorf("with ce_subject, asyncapi.yaml refuses the headers: %v", err)
			}
		})
	}
}

// asyncAPIHeaders compiles the headers schema of the cloudEvent message
// trait, which every event message has.
func asyncAPIHeaders(t *testing.T) *jsonschema.Schema {
	t.Helper()
	j, err := yaml.YAMLToJSON(schemas.AsyncAPI)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("asyncapi.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("asyncapi.json#/components/messageTraits/cloudEvent/headers")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAsyncAPISignatureForms validates the headers of every binary golden
// sample, in both signature forms, against asyncapi.yaml, and checks that
// it refuses what the decoder refuses: both signature headers or neither,
// and a non-status event without ce_dataschema.
func TestAsyncAPISignatureForms(t *testing.T) {
	headers := asyncAPIHeaders(t)
	paths, err := filepath.Glob("testdata/golden/*io.argosy.*.json")
	if err != nil {
		t.Fatal(err)
	}
	compact, err := filepath.Glob("testdata/golden/" + golden.CompactDir + "/io.argosy.*.json")
	if err != nil || len(compact) == 0 || len(paths) == 0 {
		t.Fatalf("no golden samples: %v", err)
	}
	for _, path := range append(paths, compact...) {
		s, err := golden.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		h := map[string]any{}
		for _, x := range s.Headers {
			h[x.Key] = x.Value
		}
		if err := headers.Validate(h); err != nil {
			t.Errorf("%s: asyncapi.yaml refuses its headers: %v", path, err)
		}
		sp, _ := Lookup(s.Headers[slices.IndexFunc(s.Headers, func(x golden.Header) bool { return x.Key == "ce_type" })].Value)
		for name, change := range map[string]func(map[string]any){
			"both signatures": func(h map[string]any) { h["ce_sig"], h["ce_dssematerial"] = "AQ==", "ZW52ZWxvcGU=" },
			"no signature":    func(h map[string]any) { delete(h, "ce_sig"); delete(h, "ce_dssematerial") },
			"no dataschema":   func(h map[string]any) { delete(h, "ce_dataschema") },
		} {
			c := maps.Clone(h)
			change(c)
			refuses := headers.Validate(c) != nil
			if want := name != "no dataschema" || !sp.TypeNamesSchema(); refuses != want {
				t.Errorf("%s, %s: asyncapi.yaml refuses it %v, want %v", path, name, refuses, want)
			}
		}
	}
}
