//go:build argosy_testhooks

package cli

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/argosyproj/argosy/events"
)

// crashAfter wraps h to kill the process after the apply that
// EnvCrashAfterApplies names, if it names one.
func crashAfter(h events.Handler) events.Handler {
	n, err := strconv.Atoi(os.Getenv(EnvCrashAfterApplies))
	if err != nil || n <= 0 {
		return h
	}
	var applied atomic.Int64
	return func(ctx context.Context, d *events.Decoded) error {
		err := h(ctx, d)
		if err == nil && applied.Add(1) == int64(n) {
			if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
				return err
			}
			select {} // SIGKILL cannot be caught; this never returns
		}
		return err
	}
}
