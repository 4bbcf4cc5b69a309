//go:build argosy_testhooks

package cli

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
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
			kill()
		}
	})}
}

// crashArgo wraps a to kill the process right after the operation that
// EnvCrashAfterOperations names reached Argo CD, if it names one.
func crashArgo(a *argocd.Client) spoke.ArgoCD {
	n, err := strconv.Atoi(os.Getenv(EnvCrashAfterOperations))
	if err != nil || n <= 0 {
		return a
	}
	c := &crashingArgo{Client: a}
	c.n.Store(int64(n))
	return c
}

// crashingArgo is an Argo CD that kills the process after its n-th
// operation, whether performed at once (Operate) or started by the
// Operator (Start); it keeps the Client's Revert and Inspect.
type crashingArgo struct {
	*argocd.Client
	n, done atomic.Int64 // the operation to crash after, and those done
}

func (c *crashingArgo) Operate(ctx context.Context, ref argocd.Ref, op argocd.Operation) error {
	err := c.Client.Operate(ctx, ref, op)
	if err == nil && c.done.Add(1) == c.n.Load() {
		kill()
	}
	return err
}

func (c *crashingArgo) Start(ctx context.Context, ref argocd.Ref, op argocd.Operation, version string) error {
	err := c.Client.Start(ctx, ref, op, version)
	if err == nil && c.done.Add(1) == c.n.Load() {
		kill()
	}
	return err
}

func kill() {
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err == nil {
		select {} // SIGKILL cannot be caught; this never returns
	}
}
