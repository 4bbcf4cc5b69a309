//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package toolcache

import (
	"context"
	"errors"
	"fmt"
)

// lockFile is not implemented where flock(2) is missing.
func lockFile(context.Context, string) (func() error, error) {
	return nil, fmt.Errorf("locking the tool cache: %w", errors.ErrUnsupported)
}
