//go:build !integration

package sqlstore

// serverBackends are none without the integration build tag: see
// postgres_test.go.
var serverBackends []namedBackend
