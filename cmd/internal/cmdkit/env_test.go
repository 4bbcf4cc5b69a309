package cmdkit_test

import (
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestEnvFallbacks checks the flag defaults from the environment: unset
// and empty mean the default, and a malformed number or duration gives the
// value Validate refuses.
func TestEnvFallbacks(t *testing.T) {
	const name = "ARGOSY_CMDKIT_TEST"
	tests := []struct {
		env      string
		str      string
		num      int
		duration time.Duration
	}{
		{env: "", str: "def", num: -1, duration: 30 * time.Second},
		{env: "7", str: "7", num: 7, duration: -2},
		{env: "5s", str: "5s", num: -2, duration: 5 * time.Second},
		{env: "nope", str: "nope", num: -2, duration: -2},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(name, tc.env)
			if got := cmdkit.Env(name, "def"); got != tc.str {
				t.Errorf("Env %q, want %q", got, tc.str)
			}
			if got := cmdkit.EnvInt(name, -1, -2); got != tc.num {
				t.Errorf("EnvInt %d, want %d", got, tc.num)
			}
			if got := cmdkit.EnvDuration(name, 30*time.Second, -2); got != tc.duration {
				t.Errorf("EnvDuration %v, want %v", got, tc.duration)
			}
		})
	}
}

func TestDevDir(t *testing.T) {
	t.Setenv("ARGOSY_DEV_DIR", "")
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := cmdkit.DevDir(); got != "/data/argosy/dev" {
		t.Errorf("DevDir = %q, want /data/argosy/dev", got)
	}
	t.Setenv("ARGOSY_DEV_DIR", "/elsewhere")
	if got := cmdkit.DevDir(); got != "/elsewhere" {
		t.Errorf("DevDir = %q, want $ARGOSY_DEV_DIR", got)
	}
}
