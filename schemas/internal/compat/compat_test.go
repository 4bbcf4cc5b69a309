package compat

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// obj wraps property schemas in an object schema, for short test cases.
func obj(props string, extra ...string) string {
	parts := append([]string{`"type":"object","properties":{` + props + `}`}, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		baseline string
		current  string
		want     []Problem
	}{
		{
			name:     "identical",
			baseline: obj(`"a":{"type":"string"}`, `"required":["a"]`),
			current:  obj(`"a":{"type":"string"}`, `"required":["a"]`),
		},
		{
			name:     "annotations only",
			baseline: obj(`"a":{"type":"string","description":"old"}`, `"title":"T"`),
			current:  obj(`"a":{"type":"string","description":"new","examples":["x"]}`, `"title":"U"`),
		},
		{
			name:     "optional property added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string"},"b":{"type":"integer"}`),
		},
		{
			name:     "property removed",
			baseline: obj(`"a":{"type":"string"},"b":{"type":"integer"}`),
			current:  obj(`"a":{"type":"string"}`),
			want:     []Problem{{"#", `property "b" removed`}},
		},
		{
			name:     "required property removed",
			baseline: obj(`"a":{"type":"string"}`, `"required":["a"]`),
			current:  obj(``),
			want: []Problem{
				{"#", `property "a" is no longer required; readers of the baseline may depend on it`},
				{"#", `property "a" removed`},
			},
		},
		{
			name:     "type changed",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"integer"}`),
			want:     []Problem{{"#/properties/a", "type changed from string to integer"}},
		},
		{
			name:     "type widened to a union",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":["string","null"]}`),
			want:     []Problem{{"#/properties/a", "type changed from string to null, string"}},
		},
		{
			name:     "type union reordered",
			baseline: obj(`"a":{"type":["string","null"]}`),
			current:  obj(`"a":{"type":["null","string"]}`),
		},
		{
			name:     "type added",
			baseline: obj(`"a":{}`),
			current:  obj(`"a":{"type":"object"}`),
			want:     []Problem{{"#/properties/a", "type constraint added: object"}},
		},
		{
			name:     "type removed",
			baseline: obj(`"a":{"type":"object"}`),
			current:  obj(`"a":{}`),
			want:     []Problem{{"#/properties/a", "type constraint removed (was object)"}},
		},
		{
			name:     "property became required",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string"}`, `"required":["a"]`),
			want:     []Problem{{"#", `property "a" became required`}},
		},
		{
			name:     "new property required",
			baseline: obj(``),
			current:  obj(`"a":{"type":"string"}`, `"required":["a"]`),
			want:     []Problem{{"#", `property "a" became required`}},
		},
		{
			name:     "enum narrowed",
			baseline: obj(`"a":{"enum":["x","y","z"]}`),
			current:  obj(`"a":{"enum":["x","z"]}`),
			want:     []Problem{{"#/properties/a", `value "y" no longer allowed`}},
		},
		{
			name:     "enum widened",
			baseline: obj(`"a":{"enum":["x","y"]}`),
			current:  obj(`"a":{"enum":["y","x","z"]}`),
		},
		{
			name:     "enum added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","enum":["x"]}`),
			want:     []Problem{{"#/properties/a", `values restricted to ["x"]; any value was allowed before`}},
		},
		{
			name:     "enum dropped",
			baseline: obj(`"a":{"type":"string","enum":["x"]}`),
			current:  obj(`"a":{"type":"string"}`),
		},
		{
			name:     "const changed",
			baseline: obj(`"a":{"const":1}`),
			current:  obj(`"a":{"const":2}`),
			want:     []Problem{{"#/properties/a", "value 1 no longer allowed"}},
		},
		{
			name:     "const widened to enum",
			baseline: obj(`"a":{"const":"x"}`),
			current:  obj(`"a":{"enum":["x","y"]}`),
		},
		{
			name:     "pattern added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","pattern":"^[a-z]+$"}`),
			want:     []Problem{{"#/properties/a", `pattern added: "^[a-z]+$"`}},
		},
		{
			name:     "pattern changed",
			baseline: obj(`"a":{"type":"string","pattern":"^[a-z]+$"}`),
			current:  obj(`"a":{"type":"string","pattern":"^[a-z0-9]+$"}`),
			want:     []Problem{{"#/properties/a", `pattern changed from "^[a-z]+$" to "^[a-z0-9]+$"`}},
		},
		{
			name:     "pattern dropped",
			baseline: obj(`"a":{"type":"string","pattern":"^[a-z]+$"}`),
			current:  obj(`"a":{"type":"string"}`),
		},
		{
			name:     "format added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","format":"date-time"}`),
			want:     []Problem{{"#/properties/a", `format added: "date-time"`}},
		},
		{
			name:     "maxLength lowered",
			baseline: obj(`"a":{"type":"string","maxLength":63}`),
			current:  obj(`"a":{"type":"string","maxLength":32}`),
			want:     []Problem{{"#/properties/a", "maxLength lowered from 63 to 32"}},
		},
		{
			name:     "maxLength raised",
			baseline: obj(`"a":{"type":"string","maxLength":63}`),
			current:  obj(`"a":{"type":"string","maxLength":253}`),
		},
		{
			name:     "maxLength added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","maxLength":10}`),
			want:     []Problem{{"#/properties/a", "maxLength added: 10"}},
		},
		{
			name:     "minLength zero added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","minLength":0}`),
		},
		{
			name:     "minLength added",
			baseline: obj(`"a":{"type":"string"}`),
			current:  obj(`"a":{"type":"string","minLength":1}`),
			want:     []Problem{{"#/properties/a", "minLength raised from 0 to 1"}},
		},
		{
			name:     "minimum raised",
			baseline: obj(`"a":{"type":"integer","minimum":-1}`),
			current:  obj(`"a":{"type":"integer","minimum":0}`),
			want:     []Problem{{"#/properties/a", "minimum raised from -1 to 0"}},
		},
		{
			name:     "minimum lowered",
			baseline: obj(`"a":{"type":"integer","minimum":0}`),
			current:  obj(`"a":{"type":"integer","minimum":-1}`),
		},
		{
			name:     "minimum added",
			baseline: obj(`"a":{"type":"integer"}`),
			current:  obj(`"a":{"type":"integer","minimum":0}`),
			want:     []Problem{{"#/properties/a", "minimum added: 0"}},
		},
		{
			name:     "maximum lowered and exclusiveMaximum added",
			baseline: obj(`"a":{"type":"integer","maximum":599}`),
			current:  obj(`"a":{"type":"integer","maximum":500,"exclusiveMaximum":501}`),
			want: []Problem{
				{"#/properties/a", "maximum lowered from 599 to 500"},
				{"#/properties/a", "exclusiveMaximum added: 501"},
			},
		},
		{
			name:     "multipleOf loosened",
			baseline: obj(`"a":{"type":"integer","multipleOf":4}`),
			current:  obj(`"a":{"type":"integer","multipleOf":2}`),
		},
		{
			name:     "multipleOf tightened",
			baseline: obj(`"a":{"type":"integer","multipleOf":2}`),
			current:  obj(`"a":{"type":"integer","multipleOf":4}`),
			want:     []Problem{{"#/properties/a", "multipleOf changed from 2 to 4, which does not divide it"}},
		},
		{
			name:     "uniqueItems turned on",
			baseline: obj(`"a":{"type":"array"}`),
			current:  obj(`"a":{"type":"array","uniqueItems":true}`),
			want:     []Problem{{"#/properties/a", "uniqueItems turned on"}},
		},
		{
			name:     "additionalProperties turned off",
			baseline: obj(``, `"additionalProperties":true`),
			current:  obj(``, `"additionalProperties":false`),
			want:     []Problem{{"#", "additionalProperties turned to false: values it allowed before are rejected now"}},
		},
		{
			name:     "additionalProperties turned on",
			baseline: obj(``, `"additionalProperties":false`),
			current:  obj(``, `"additionalProperties":true`),
		},
		{
			name:     "map value type changed",
			baseline: obj(`"labels":{"type":"object","additionalProperties":{"type":"string"}}`),
			current:  obj(`"labels":{"type":"object","additionalProperties":{"type":"integer"}}`),
			want:     []Problem{{"#/properties/labels/additionalProperties", "type changed from string to integer"}},
		},
		{
			name:     "map value schema added",
			baseline: obj(`"labels":{"type":"object"}`),
			current:  obj(`"labels":{"type":"object","additionalProperties":{"type":"string"}}`),
			want:     []Problem{{"#/properties/labels/additionalProperties", "type constraint added: string"}},
		},
		{
			name:     "new property narrower than baseline additionalProperties",
			baseline: obj(``, `"additionalProperties":{"type":"string"}`),
			current:  obj(`"a":{"type":"integer"}`, `"additionalProperties":{"type":"string"}`),
			want:     []Problem{{"#/properties/a", "type changed from string to integer"}},
		},
		{
			name:     "nested property type changed",
			baseline: obj(`"a":` + obj(`"b":{"type":"string"}`)),
			current:  obj(`"a":` + obj(`"b":{"type":"boolean"}`)),
			want:     []Problem{{"#/properties/a/properties/b", "type changed from string to boolean"}},
		},
		{
			name:     "nested property removed",
			baseline: obj(`"a":` + obj(`"b":{"type":"string"}`)),
			current:  obj(`"a":` + obj(``)),
			want:     []Problem{{"#/properties/a", `property "b" removed`}},
		},
		{
			name:     "items type changed",
			baseline: obj(`"list":{"type":"array","items":{"type":"string"}}`),
			current:  obj(`"list":{"type":"array","items":{"type":"integer"}}`),
			want:     []Problem{{"#/properties/list/items", "type changed from string to integer"}},
		},
		{
			name:     "items of objects lose a property",
			baseline: obj(`"list":{"type":"array","items":` + obj(`"x":{},"y":{}`) + `}`),
			current:  obj(`"list":{"type":"array","items":` + obj(`"x":{}`) + `}`),
			want:     []Problem{{"#/properties/list/items", `property "y" removed`}},
		},
		{
			name:     "items dropped",
			baseline: obj(`"list":{"type":"array","items":{"type":"string"}}`),
			current:  obj(`"list":{"type":"array"}`),
		},
		{
			name:     "tuple items changed",
			baseline: obj(`"t":{"type":"array","prefixItems":[{"type":"string"}]}`),
			current:  obj(`"t":{"type":"array","prefixItems":[{"type":"integer"}]}`),
			want:     []Problem{{"#/properties/t", "prefixItems changed; whether it narrows the schema is not checked"}},
		},
		{
			name:     "definition removed",
			baseline: obj(``, `"$defs":{"d":{"type":"string"}}`),
			current:  obj(``),
			want:     []Problem{{"#", `definition "d" removed from $defs`}},
		},
		{
			name:     "definition changed",
			baseline: obj(``, `"$defs":{"d":`+obj(`"x":{"type":"string"}`)+`}`),
			current:  obj(``, `"$defs":{"d":`+obj(`"x":{"type":"number"}`)+`}`),
			want:     []Problem{{"#/$defs/d/properties/x", "type changed from string to number"}},
		},
		{
			name:     "referenced definition changed is reported once",
			baseline: obj(`"p":{"$ref":"#/$defs/d","description":"p"}`, `"$defs":{"d":`+obj(`"x":{"enum":["a","b"]}`)+`}`),
			current:  obj(`"p":{"$ref":"#/$defs/d","description":"p"}`, `"$defs":{"d":`+obj(`"x":{"enum":["a"]}`)+`}`),
			want:     []Problem{{"#/properties/p/properties/x", `value "b" no longer allowed`}},
		},
		{
			name:     "inline schema moved to a definition",
			baseline: obj(`"p":` + obj(`"x":{"type":"string"}`)),
			current:  obj(`"p":{"$ref":"#/$defs/d"}`, `"$defs":{"d":`+obj(`"x":{"type":"string"}`)+`}`),
		},
		{
			name:     "reference by absolute $id",
			baseline: `{"$id":"https://example.test/s.json","type":"object","properties":{"p":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string"}}}`,
			current:  `{"$id":"https://example.test/s.json","type":"object","properties":{"p":{"$ref":"https://example.test/s.json#/$defs/d"}},"$defs":{"d":{"type":"string"}}}`,
		},
		{
			name:     "external reference changed",
			baseline: obj(`"p":{"$ref":"other.json"}`),
			current:  obj(`"p":{"$ref":"another.json"}`),
			want:     []Problem{{"#/properties/p", `reference changed from "other.json" to "another.json" and cannot be followed to check it`}},
		},
		{
			name:     "external reference kept",
			baseline: obj(`"p":{"$ref":"other.json"}`),
			current:  obj(`"p":{"$ref":"other.json"}`),
		},
		{
			name:     "recursive schema",
			baseline: obj(`"children":{"type":"array","items":{"$ref":"#"}}`),
			current:  obj(`"children":{"type":"array","items":{"$ref":"#"}},"name":{"type":"string"}`),
		},
		{
			name:     "recursive schema narrowed",
			baseline: obj(`"children":{"type":"array","items":{"$ref":"#"}},"n":{"type":"number"}`),
			current:  obj(`"children":{"type":"array","items":{"$ref":"#"}},"n":{"type":"integer"}`),
			want:     []Problem{{"#/properties/n", "type changed from number to integer"}},
		},
		{
			name:     "allOf added",
			baseline: obj(`"a":{}`),
			current:  obj(`"a":{"allOf":[{"type":"string"}]}`),
			want:     []Problem{{"#/properties/a", "allOf added; whether it narrows the schema is not checked"}},
		},
		{
			name:     "oneOf dropped",
			baseline: obj(`"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}`),
			current:  obj(`"a":{}`),
		},
		{
			name:     "property schema turned false",
			baseline: obj(`"a":true`),
			current:  obj(`"a":false`),
			want:     []Problem{{"#/properties/a", "not added; whether it narrows the schema is not checked"}},
		},
		{
			name:     "$id changed",
			baseline: `{"$id":"https://example.test/a.json"}`,
			current:  `{"$id":"https://example.test/b.json"}`,
			want:     []Problem{{"#", `$id changed from "https://example.test/a.json" to "https://example.test/b.json"`}},
		},
		{
			name:     "$schema changed",
			baseline: `{"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
			current:  `{"$schema":"http://json-schema.org/draft-07/schema#"}`,
			want:     []Problem{{"#", `$schema changed from "https://json-schema.org/draft/2020-12/schema" to "http://json-schema.org/draft-07/schema#"`}},
		},
		{
			name:     "escaped property names",
			baseline: obj(`"a/b~c":{"type":"string"}`),
			current:  obj(`"a/b~c":{"type":"integer"}`),
			want:     []Problem{{"#/properties/a~1b~0c", "type changed from string to integer"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check([]byte(tt.baseline), []byte(tt.current))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckInvalidInput(t *testing.T) {
	valid := `{"type":"object"}`
	tests := []struct {
		name     string
		baseline string
		current  string
	}{
		{"baseline not JSON", `{`, valid},
		{"current not JSON", valid, `nope`},
		{"array schema", `[]`, valid},
		{"string schema", valid, `"x"`},
		{"trailing data", valid, valid + ` {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Check([]byte(tt.baseline), []byte(tt.current)); err == nil {
				t.Error("Check: want an error, got none")
			}
		})
	}
}

func TestCheckBooleanSchemas(t *testing.T) {
	tests := []struct {
		name              string
		baseline, current string
		wantProblems      int
	}{
		{"true to true", `true`, `true`, 0},
		{"true to object", `true`, `{"type":"object"}`, 1},
		{"object to true", `{"type":"object"}`, `true`, 1},
		{"true to false", `true`, `false`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check([]byte(tt.baseline), []byte(tt.current))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if len(got) != tt.wantProblems {
				t.Errorf("got %d problems %v, want %d", len(got), got, tt.wantProblems)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{Path: "#/properties/a", Message: "type changed from string to integer"}
	if got, want := p.String(), "#/properties/a: type changed from string to integer"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
