package apicmd_test

import (
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
)

// TestResolveCA checks where the CA bundle comes from: --certificate-authority,
// then ARGOSY_CERTIFICATE_AUTHORITY, then the context that applies; a
// current context for another server lends none.
func TestResolveCA(t *testing.T) {
	path := cmdtest.Isolate(t)
	cfg := &config.Config{CurrentContext: "private", Contexts: []config.Context{
		{Name: "private", Server: "https://hub.internal", Token: "t", CertificateAuthority: "/etc/ctx-ca.crt"}}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{name: "context", want: "/etc/ctx-ca.crt"},
		{name: "environment", env: "/etc/env-ca.crt", want: "/etc/env-ca.crt"},
		{name: "flag", env: "/etc/env-ca.crt", args: []string{"--certificate-authority", "/etc/flag-ca.crt"}, want: "/etc/flag-ca.crt"},
		{name: "another server", args: []string{"--server", "https://other.example.com"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(apicmd.EnvCA, tc.env)
			got, err := parse(t, tc.args...).Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got.CA != tc.want {
				t.Errorf("CA %q, want %q", got.CA, tc.want)
			}
		})
	}
}
