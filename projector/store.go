package projector

import (
	"context"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

// Partition names one topic partition.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Batch is what one fold step writes: rows, chain heads, and the next offset
// of every partition it read. A Store writes a Batch in one transaction, so
// the views and the offsets never disagree: a crash before the commit loses
// the whole step, which is folded again from the stored offsets.
type Batch struct {
	Offsets map[Partition]int64
	// From is, for the partitions whose writer knows it, the stored offset
	// the step began at. A store commits the batch only if each of those
	// partitions' stored offset is still that (no offset stored counts as
	// 0): a compare-and-set, so that a replica that lost a partition in the
	// middle of a step cannot write over what the new owner folded since.
	From          map[Partition]int64
	ChainHeads    map[Partition]string
	Registrations []ClusterRegistration
	Beats         []ClusterBeat
	Desired       []AppDesired
	Observed      []AppObserved
	Objects       []ObjectGeneration
	Operations    []Operation
	Acks          []Ack
	Calls         []Call
	Audit         []AuditEntry
	Deployments   []Deployment
	Gaps          []Gap
	Targets       []Target
	Health        []HealthChange
}

// Empty reports whether the batch changes nothing but offsets.
func (b *Batch) Empty() bool {
	return len(b.Registrations)+len(b.Beats)+len(b.Desired)+len(b.Observed)+len(b.Objects)+len(b.Operations)+len(b.Acks)+
		len(b.Calls)+len(b.Audit)+len(b.Deployments)+len(b.Gaps)+len(b.Targets)+len(b.Health) == 0
}

// Store is where the views live: the embedded store and PostgreSQL
// implement it, and run the same test suite.
type Store interface {
	// Commit writes the batch and its offsets atomically.
	Commit(ctx context.Context, b *Batch) error
	// Offsets returns the next offset to read of each partition the store
	// has one for.
	Offsets(ctx context.Context, ps []Partition) (map[Partition]int64, error)
	// Load returns the rows a fold step needs that the store holds.
	Load(ctx context.Context, need *Need) (*Rows, error)
}

// Need lists the rows a fold step reads before it writes.
type Need struct {
	Registrations []string
	Beats         []string
	Desired       []AppKey
	Observed      []AppKey
	Objects       []ObjectKey
	// Operations are request ids.
	Operations []string
	ChainHeads []Partition
}

// Rows are stored rows, by key.
type Rows struct {
	Registrations map[string]ClusterRegistration
	Beats         map[string]ClusterBeat
	Desired       map[AppKey]AppDesired
	Observed      map[AppKey]AppObserved
	Objects       map[ObjectKey]ObjectGeneration
	Operations    map[string]Operation
	ChainHeads    map[Partition]string
}

// The read side of a Store comes in slices, each named by what it reads,
// so that what needs one slice takes only that one: Fleet (the fleet
// pages, a caller's scope), Chains (paging and verifying the audit chains)
// and Deliveries (the deployment and rollout reports). Query is their union
// with the joined audit history, which the read API and the dashboard serve.

// Fleet reads the clusters and their Applications.
type Fleet interface {
	// Clusters returns every cluster the log mentions, by name.
	Clusters(ctx context.Context) ([]ClusterRow, error)
	Cluster(ctx context.Context, name string) (ClusterRow, bool, error)
	// ClusterSummaries returns every cluster Clusters returns, by name,
	// with only what filtering and sorting a large fleet needs: cheaper
	// than Clusters, which counts every cluster's Applications.
	ClusterSummaries(ctx context.Context) ([]ClusterSummary, error)
	// Apps returns the Applications that match f, by cluster, namespace
	// and name.
	Apps(ctx context.Context, f AppFilter) ([]AppRow, error)
}

// Chains reads the audit entries as stored, partition by partition.
type Chains interface {
	// Chain returns the audit entries of one partition in offset order,
	// starting after offset after (-1 for the start), at most limit.
	Chain(ctx context.Context, p Partition, after int64, limit int) ([]AuditEntry, error)
	// ChainPartitions returns the partitions that have audit entries.
	ChainPartitions(ctx context.Context) ([]Partition, error)
}

// Deliveries reads the deployment history the reports are made of.
type Deliveries interface {
	// Deployments returns the deployment records that match f, by finish
	// time.
	Deployments(ctx context.Context, f DeploymentFilter) ([]Deployment, error)
	// Gaps returns the deployment gaps of the clusters in f (all if none).
	Gaps(ctx context.Context, f DeploymentFilter) ([]Gap, error)
	// Targets returns the placement targets that match f (its Name is the
	// placement's, its span on their log time), by time.
	Targets(ctx context.Context, f DeploymentFilter) ([]Target, error)
	// HealthChanges returns the health changes that match f (no project),
	// by time.
	HealthChanges(ctx context.Context, f DeploymentFilter) ([]HealthChange, error)
}

// Query is the whole read side of a Store, which package projector/read
// serves: every slice, and the audit history with its joins.
type Query interface {
	Fleet
	Chains
	Deliveries
	// Audit returns audit entries that match f, newest first, with the
	// actor and the apply results joined in.
	Audit(ctx context.Context, f AuditFilter) ([]AuditRow, error)
}

// ClusterRow is a cluster's registration and last heartbeat, and its
// Applications' count.
type ClusterRow struct {
	Name         string               `json:"name"`
	Registration *ClusterRegistration `json:"registration,omitempty"`
	Beat         *ClusterBeat         `json:"heartbeat,omitempty"`
	Applications int                  `json:"applications"`
}

// ClusterSummary is a cluster's registration and last heartbeat in brief.
type ClusterSummary struct {
	Name string `json:"name"`
	// Registration is nil when only heartbeats are known.
	Registration *ClusterRegistration `json:"registration,omitempty"`
	// HeartbeatAt is the last heartbeat's time; zero when none came.
	HeartbeatAt time.Time `json:"heartbeatAt,omitzero"`
	ConfigLag   int64     `json:"configLag"`
	// Applications is the count the last heartbeat reported.
	Applications int `json:"applications"`
}

// Row returns the summary as a ClusterRow without counts, for what takes
// one (such as the read package's freshness).
func (c ClusterSummary) Row() ClusterRow {
	r := ClusterRow{Name: c.Name, Registration: c.Registration}
	if !c.HeartbeatAt.IsZero() {
		r.Beat = &ClusterBeat{Cluster: c.Name, At: c.HeartbeatAt, ConfigLag: c.ConfigLag, Applications: c.Applications}
	}
	return r
}

// Summary returns the row in brief.
func (c ClusterRow) Summary() ClusterSummary {
	s := ClusterSummary{Name: c.Name, Registration: c.Registration}
	if c.Beat != nil {
		s.HeartbeatAt, s.ConfigLag, s.Applications = c.Beat.At, c.Beat.ConfigLag, c.Beat.Applications
	}
	return s
}

// AppRow is an Application's desired and observed state.
type AppRow struct {
	AppKey
	Desired  *AppDesired  `json:"desired,omitempty"`
	Observed *AppObserved `json:"observed,omitempty"`
}

// AppFilter selects Applications; empty fields match all.
type AppFilter struct {
	Cluster, Namespace, Name string
	// Brief leaves out what summing up many rows does not need, and is
	// the bulk of their bytes: the desired spec, and the observed
	// conditions, resources and local Application. A store may return
	// them anyway.
	Brief bool
}

// AuditRow is an audit entry with what was joined to it.
type AuditRow struct {
	AuditEntry
	// Results are the clusters' acknowledgements of a config change.
	Results []Ack `json:"results,omitempty"`
	// RequestID, Via and Placement are joined from the API call that
	// appended the entry's event, as Actor is (for an API call, from the
	// call itself): the request, the hub component that acted for the
	// actor, and the placement change it made or carried out. The
	// timeline (read.Timeline) folds an action's entries by them.
	RequestID string                `json:"requestId,omitempty"`
	Via       string                `json:"via,omitempty"`
	Placement *schemas.PlacementRef `json:"placement,omitempty"`
}

// AuditFilter selects audit entries; zero fields match all.
type AuditFilter struct {
	Cluster, Namespace, Name, Actor string
	From, To                        time.Time
	Limit                           int
	// Changes leaves out the API calls that were allowed and appended no
	// event (reads, logins and logouts, dry runs): what remains are
	// changes and refusals.
	Changes bool
}

// DeploymentFilter selects deployment records; zero fields match all.
type DeploymentFilter struct {
	Cluster, Project, Namespace, Name string
	From, To                          time.Time
	// Last, when positive, keeps only the Last newest of the matching
	// records (still in finish-time order), so that a page of recent
	// deployments reads no more than it shows however long the history.
	Last int
}

// ClusterBacklog is how far behind a registered cluster is: the oldest
// config change it has not acknowledged, and its last heartbeat. The
// projector's per-cluster gauges report it.
type ClusterBacklog struct {
	Cluster string
	// OldestUnapplied is the log time of the oldest config event for the
	// cluster, at or past the offset its last heartbeat says its agent has
	// read to, that no acknowledgement (applied or rejected) answers and
	// the fold did not refuse as a replay; zero when there is none.
	OldestUnapplied time.Time
	// HeartbeatAt is the last heartbeat's log time; zero when none came.
	HeartbeatAt time.Time
}
