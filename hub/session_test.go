package hub

import (
	"github.com/argosyproj/argosy/hub/auth"

	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLocalPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/clusters/prod-eu", "/clusters/prod-eu"},
		{"/applications?cluster=prod-eu&q=a%20b", "/applications?cluster=prod-eu&q=a%20b"},
		// Browsers drop tabs and newlines and read a backslash as a
		// slash: each of these is another host to them.
		{"/\t/evil.example", "/"},
		{"/%09/evil.example", "/"},
		{"/\n/x", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\\evil", "/"},
		{"/%5cevil", "/"},
		{"\\/evil", "/"},
		{"//x", "/"},
		{"/%2F/evil.example", "/"},
		{"https://x", "/"},
		{"javascript:alert(1)", "/"},
		{" //evil.example", "/"},
		{"/\x00/x", "/"},
		{"/\x7f/x", "/"},
		{"", "/"},
	}
	for _, tc := range tests {
		if got := localPath(tc.in); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOIDCLoginStateLocalPath checks that the OIDC login's next page,
// read back from its state cookie, is held to the same rule.
func TestOIDCLoginStateLocalPath(t *testing.T) {
	for _, next := range []string{"/\t/evil.example", "//evil.example", "/\\evil"} {
		b, err := json.Marshal(oidcLogin{State: "s", Next: next})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, auth.OIDCCallback+"?state=s", nil)
		r.AddCookie(&http.Cookie{Name: oidcStateCookie, Value: base64.RawURLEncoding.EncodeToString(b)})
		l, err := loginState(r)
		if err != nil || l.Next != "/" {
			t.Errorf("next %q: login state next %q, %v; want /", next, l.Next, err)
		}
	}
}
