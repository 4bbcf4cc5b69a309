package cmdkit

import (
	"os"
	"path/filepath"
)

// DevDir is argosy dev's data directory: $ARGOSY_DEV_DIR, else argosy/dev
// under $XDG_DATA_HOME, else under ~/.local/share.
func DevDir() string {
	if d := os.Getenv("ARGOSY_DEV_DIR"); d != "" {
		return d
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "argosy-dev")
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "argosy", "dev")
}
