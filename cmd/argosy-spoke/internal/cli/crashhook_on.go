//go:build argosy_testhooks

package cli

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/spoke"
)

// crashHook kills the process after the apply that EnvCrashAfterApplies
// names, if it names one: after the event was applied, recorded and
// acknowledged, before its offset is committed.
func crashHook() []spoke.Option {
	n, err := strconv.Atoi(os.Getenv(EnvCrashAfterApplies))
	if err != nil || n <= 0 {
		return nil
	}
	var applied atomic.Int64
	return []spoke.Option{spoke.WithApplied(func(context.Context, *events.Decoded) {
		if applied.Add(1) == int64(n) {
			if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err == nil {
				select {} // SIGKILL cannot be caught; this never returns
			}
		}
	})}
}
