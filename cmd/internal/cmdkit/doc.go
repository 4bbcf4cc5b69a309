// Package cmdkit is what the argosy and argosy-spoke command trees share,
// written once: the standard streams a command writes to, usage errors and
// the exit codes Main turns errors into, flag defaults from the
// environment, serving HTTP until the context ends, the -o/--output formats
// and the version command.
//
// Both binaries link it, the spoke's agent included, so it imports no
// Argosy library beyond internal/version: the read API's client, for one,
// lives with the argosy commands that use it.
package cmdkit
