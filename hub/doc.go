// Package hub takes changes (HTTP API, CLI, mirrored Application objects) and
// appends them to the log as signed events. It never holds credentials to
// workload clusters.
//
// It is empty until the hub issue lands; it may import projector (read side),
// events and schemas, and never spoke.
package hub
