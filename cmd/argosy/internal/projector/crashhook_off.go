//go:build !argosy_testhooks

package projector

import argosyprojector "github.com/argosyproj/argosy/projector"

// withCrash is s: production binaries carry no fault hook.
func withCrash(s argosyprojector.Store) argosyprojector.Store { return s }
