// Package spoke is the agent that runs in each workload cluster: it reads its
// cluster's config partition, reconciles the local Argo CD and publishes
// status back.
//
// It is empty until the spoke issue lands; it may import projector (read
// side), events and schemas, and never hub. Only the spoke's own binary
// (cmd/argosy-spoke) may link github.com/argoproj/argo-cd/v2.
package spoke
