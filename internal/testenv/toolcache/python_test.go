package toolcache

import "testing"

func TestCheckPinned(t *testing.T) {
	tests := []struct {
		name, req string
		ok        bool
	}{
		{"pins", "# comment\ncloudevents==2.2.0\n\nPyNaCl==1.6.2\nrpds-py==2026.9.1\n", true},
		{"a range", "jsonschema>=4\n", false},
		{"a bare name", "jsonschema\n", false},
		{"an option", "--index-url x\n", false},
		{"two specifiers", "a==1,<2\n", false},
		{"nothing", "# only a comment\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkPinned([]byte(tc.req)); (err == nil) != tc.ok {
				t.Errorf("checkPinned: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
