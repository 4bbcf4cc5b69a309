package cmdkit

import (
	"os"
	"strconv"
	"time"
)

// Env is the environment variable name, or def when it is unset or empty:
// the default of the flag it stands behind.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// EnvInt is Env for an integer flag. A value that does not parse gives bad,
// which the options' Validate must refuse, so that the mistake is reported
// with the others.
func EnvInt(name string, def, bad int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return bad
	}
	return n
}

// EnvDuration is Env for a duration flag. A value that does not parse gives
// bad, which the options' Validate must refuse.
func EnvDuration(name string, def, bad time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return bad
	}
	return d
}
