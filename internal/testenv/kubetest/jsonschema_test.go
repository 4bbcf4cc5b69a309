package kubetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStandalone: references are inlined (v3's allOf wrapping too),
// objects with properties become strict unless they preserve unknown
// fields, int-or-string and nullable become types, and a cycle is cut.
func TestStandalone(t *testing.T) {
	components := map[string]any{}
	if err := json.Unmarshal([]byte(`{
		"Obj": {"type": "object", "properties": {
			"a": {"allOf": [{"$ref": "#/components/schemas/Leaf"}], "description": "d"},
			"port": {"type": "string", "format": "int-or-string"},
			"n": {"type": "string", "nullable": true},
			"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
			"self": {"$ref": "#/components/schemas/Obj"},
			"crd": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}
		}},
		"Leaf": {"type": "object", "properties": {"b": {"type": "integer"}}}
	}`), &components); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	if err := json.Unmarshal([]byte(`{"type": "object", "additionalProperties": false, "properties": {
		"a": {"type": "object", "description": "d", "additionalProperties": false, "properties": {"b": {"type": "integer"}}},
		"port": {"type": ["string", "integer"]},
		"n": {"type": ["string", "null"], "nullable": true},
		"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
		"self": {},
		"crd": {"type": ["string", "integer"], "x-kubernetes-int-or-string": true}
	}}`), &want); err != nil {
		t.Fatal(err)
	}
	got := standalone(components["Obj"], components, map[string]bool{"Obj": true})
	if diff := cmp.Diff(any(want), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestKindSuffix(t *testing.T) {
	for _, c := range []struct{ group, version, want string }{
		{"", "v1", "-v1"}, {"apps", "v1", "-apps-v1"}, {"kafka.strimzi.io", "v1", "-kafka-v1"},
		{"monitoring.coreos.com", "v1", "-monitoring-v1"}, {"policy", "v1", "-policy-v1"},
	} {
		if got := kindSuffix(c.group, c.version); got != c.want {
			t.Errorf("kindSuffix(%q, %q) = %q, want %q", c.group, c.version, got, c.want)
		}
	}
}
