//go:build !argosy_testhooks

package cli

import "github.com/argosyproj/argosy/spoke"

// crashHook is nothing: production binaries carry no fault hook.
func crashHook() []spoke.Option { return nil }
