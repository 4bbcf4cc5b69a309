//go:build !unix

package cli

// openFileLimit: no RLIMIT_NOFILE here; nothing is checked.
func openFileLimit() (uint64, bool) { return 0, false }
