//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package toolcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often lockFile retries a lock another process holds.
const lockPoll = 50 * time.Millisecond

// lockFile takes an exclusive flock(2) on path, creating the file if needed,
// and waits for it until ctx ends. Locks are per open file, so two callers in
// one process exclude each other too. The returned function releases it.
func lockFile(ctx context.Context, path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() error {
				return errors.Join(syscall.Flock(int(f.Fd()), syscall.LOCK_UN), f.Close())
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, errors.Join(fmt.Errorf("lock %s: %w", path, err), f.Close())
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(fmt.Errorf("waiting for lock %s: %w", path, ctx.Err()), f.Close())
		case <-t.C:
		}
	}
}
