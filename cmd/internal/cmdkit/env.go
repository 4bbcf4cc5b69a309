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
func EnvInt(name string, def, bad int) int { return envParsed(name, def, bad, strconv.Atoi) }

// EnvFloat is Env for a number flag. A value that does not parse gives bad,
// which the options' Validate must refuse.
func EnvFloat(name string, def, bad float64) float64 {
	return envParsed(name, def, bad, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

// EnvDuration is Env for a duration flag. A value that does not parse gives
// bad, which the options' Validate must refuse.
func EnvDuration(name string, def, bad time.Duration) time.Duration {
	return envParsed(name, def, bad, time.ParseDuration)
}

func envParsed[T any](name string, def, bad T, parse func(string) (T, error)) T {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		return bad
	}
	return x
}
