// Package hub is Argosy's write side: an HTTP API that validates,
// authorizes and audits each change and appends it to the log as signed
// events, answering once they are durable. It never connects to a workload
// cluster and holds no state of its own: every replica reads what it needs
// from the log (the ledger), writes to a config partition only after
// fencing every other writer of it and reading it to its end, and keeps
// placements' Applications on the clusters their selectors match.
//
// Server (New, Run) is the component; hub/api is its client and wire
// types; hub/auth authenticates its callers (and the projector's read
// API's); hub/internal/validate checks manifests with Argo CD's types.
// docs/hub.md describes the API and the concurrency design. It may import
// projector (read side), events and schemas, and never spoke.
package hub
