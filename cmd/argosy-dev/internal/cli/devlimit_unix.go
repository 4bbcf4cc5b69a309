//go:build unix

package cli

import "syscall"

// openFileLimit returns the process's soft RLIMIT_NOFILE, which Go
// raised to the hard limit at start; ok is false if it cannot be read.
func openFileLimit() (limit uint64, ok bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return r.Cur, true
}
