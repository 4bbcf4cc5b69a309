//go:build !argosy_testhooks

package cli

import (
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/spoke"
)

// crashHook is nothing: production binaries carry no fault hook.
func crashHook() []spoke.Option { return nil }

// crashArgo is a: production binaries carry no fault hook.
func crashArgo(a *argocd.Client) spoke.ArgoCD { return a }
