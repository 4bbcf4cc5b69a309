package apicmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOmitted(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{`{"project":"default"}`, ""},
		{`{"$omitted":{"reason":"depth","depth":9998,"bytes":60069}}`, "too deep to show: 9998 levels, 60069 bytes"},
		{`{"$omitted":{"reason":"size","depth":8,"bytes":1052589}}`, "too large to show: 1052589 bytes"},
		{`{"$omitted":{"reason":"answer","depth":99,"bytes":523253}}`, "left out of this answer: 523253 bytes"},
		{`{"$omitted":{}}`, ""},
	}
	for _, tt := range tests {
		got := Omitted(json.RawMessage(tt.raw))
		if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("Omitted(%s) = %q, want %q…", tt.raw, got, tt.want)
		}
	}
}
