// Package version holds the build's version, set at link time by the
// Makefile with -ldflags "-X".
package version

import "runtime/debug"

// Set by -ldflags "-X github.com/argosyproj/argosy/internal/version.Version=…".
var (
	Version = "dev"
	Commit  = ""
)

// Info is what `argosy version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Get returns the build's version information.
func Get() Info {
	i := Info{Version: Version, Commit: Commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i.GoVersion = bi.GoVersion
	}
	return i
}
