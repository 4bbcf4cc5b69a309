package read

import (
	"github.com/argosyproj/argosy/projector"
)

// The API's response bodies. Each is described under components/schemas in
// schemas/openapi.yaml, and the tests check every response against its
// schema. hub/api's Client decodes them.

// List is the body of a listing: the rows, in the order the view keeps them.
type List[T any] struct {
	Items []T `json:"items"`
}

// Cluster is a cluster's row and whether it is connected: its last
// heartbeat is younger than three heartbeat intervals.
type Cluster struct {
	projector.ClusterRow
	Connected bool `json:"connected"`
	// State is the cluster's freshness: Connected, Stale, Unknown or
	// Deregistered (see FreshnessOf).
	State string `json:"state"`
	// HeartbeatAgeSeconds is the age of the last heartbeat, if any.
	HeartbeatAgeSeconds *int64 `json:"heartbeatAgeSeconds,omitempty"`
}

// App is an Application's row with its cluster's freshness: while the
// cluster is not Connected, the observed status is Stale, as old as the
// cluster's last heartbeat.
type App struct {
	projector.AppRow
	Stale               bool   `json:"stale"`
	ClusterState        string `json:"clusterState"`
	HeartbeatAgeSeconds *int64 `json:"heartbeatAgeSeconds,omitempty"`
}

// DeploymentList is the body of GET /api/v1/deployments: the records and
// the gaps of the same clusters, which say where records may be missing.
type DeploymentList struct {
	Items []projector.Deployment `json:"items"`
	Gaps  []projector.Gap        `json:"gaps"`
}

// Verification is the body of GET /api/v1/audit/verify: the result of
// checking every partition's audit chain from its first entry.
type Verification struct {
	// OK is true when every chain holds.
	OK         bool             `json:"ok"`
	Partitions []PartitionCheck `json:"partitions"`
	// Broken is the first broken link, in partition order, if any.
	Broken *projector.BrokenLink `json:"broken,omitempty"`
}

// PartitionCheck is the check of one partition's chain.
type PartitionCheck struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Entries is how many entries were checked: all of them when the
	// chain holds, up to and including the broken one otherwise.
	Entries int64 `json:"entries"`
	// Head is the hash of the last entry when the chain holds.
	Head   string                `json:"head,omitempty"`
	Broken *projector.BrokenLink `json:"broken,omitempty"`
}

// errorBody is the body of every error answer: the Error schema of
// schemas/openapi.yaml, the one error body of /api/v1 (hub/api.Error is
// its Go type, above this package), of which the read API sets only its
// message.
type errorBody struct {
	Error string `json:"error"`
}
