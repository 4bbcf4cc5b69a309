//go:build argosy_testhooks

package projector

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	argosyprojector "github.com/argosyproj/argosy/projector"
)

// withCrash wraps s to kill the process around the commit that
// EnvCrashAtCommit names, if it names one.
func withCrash(s argosyprojector.Store) argosyprojector.Store {
	when, n, ok := strings.Cut(os.Getenv(EnvCrashAtCommit), ":")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 || (when != "before" && when != "after") {
		return s
	}
	return &crashingStore{Store: s, before: when == "before", n: count}
}

// crashingStore kills the process around a chosen commit.
type crashingStore struct {
	argosyprojector.Store
	before bool
	n      int
	count  atomic.Int64
}

func (c *crashingStore) Commit(ctx context.Context, b *argosyprojector.Batch) error {
	nth := c.count.Add(1) == int64(c.n)
	if nth && c.before {
		kill()
	}
	err := c.Store.Commit(ctx, b)
	if nth && !c.before && err == nil {
		kill()
	}
	return err
}

func kill() {
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err == nil {
		select {} // SIGKILL cannot be caught; this never returns
	}
}
