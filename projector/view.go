package projector

import (
	"encoding/json"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

// The view is split into tables by the one topic partition that writes each
// of them, so that replicas owning different partitions never write the same
// row, and a fold never depends on how partitions interleave:
//   - config partitions write ClusterRegistration, AppDesired,
//     ObjectGeneration, Operation, AuditEntry, Target;
//   - status partitions write ClusterBeat, AppObserved, Ack, HealthChange;
//   - deployment partitions write Deployment and Gap;
//   - the audit partition writes Call (and AuditEntry for API calls).
//
// Readers join them (package projector/read).

// AppKey names an Application on a cluster.
type AppKey struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ClusterRegistration is a cluster as the hub registered it (config).
type ClusterRegistration struct {
	Cluster      string            `json:"cluster"`
	Registered   bool              `json:"registered"`
	Labels       map[string]string `json:"labels,omitempty"`
	RegisteredAt time.Time         `json:"registeredAt"`
}

// ClusterBeat is a cluster's last heartbeat (status).
type ClusterBeat struct {
	Cluster       string         `json:"cluster"`
	Seq           int64          `json:"seq"`
	At            time.Time      `json:"at"`
	AgentVersion  string         `json:"agentVersion,omitempty"`
	ArgoCDVersion string         `json:"argocdVersion,omitempty"`
	Mode          string         `json:"mode,omitempty"`
	Applications  int            `json:"applications"`
	BySync        map[string]int `json:"bySync,omitempty"`
	ByHealth      map[string]int `json:"byHealth,omitempty"`
	ConfigOffset  int64          `json:"configOffset"`
	ConfigLag     int64          `json:"configLag"`
}

// AppDesired is an Application as the hub wants it (config).
type AppDesired struct {
	AppKey
	Project    string            `json:"project,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Generation int64             `json:"generation"`
	Deleted    bool              `json:"deleted"`
	Spec       json.RawMessage   `json:"spec,omitempty"`
	EventID    string            `json:"eventId"`
	UpdatedAt  time.Time         `json:"updatedAt"`
}

// ObjectKey names what a config event is about by its subject: an
// AppProject or a repository (Kind, Namespace, Name), or a cluster itself
// (Cluster alone, for its registration).
type ObjectKey struct {
	Cluster   string `json:"cluster"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// ObjectGeneration is the last generation the fold took of an AppProject,
// a repository or a cluster's registration (config): what an event about
// it must be newer than (docs/design.md, "Replays"). An Application's is
// its AppDesired's.
type ObjectGeneration struct {
	ObjectKey
	Generation int64     `json:"generation"`
	Deleted    bool      `json:"deleted"`
	EventID    string    `json:"eventId"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Operation is an operation.requested the fold took (config), by its
// request id: a request is taken once.
type Operation struct {
	RequestID string    `json:"requestId"`
	Cluster   string    `json:"cluster"`
	EventID   string    `json:"eventId"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	At        time.Time `json:"at"`
}

// AppObserved is an Application as its cluster reports it (status).
type AppObserved struct {
	AppKey
	// Seq is the last status delta folded in.
	Seq        int64                    `json:"seq"`
	Deleted    bool                     `json:"deleted"`
	Sync       *schemas.SyncStatus      `json:"sync,omitempty"`
	Health     *schemas.HealthStatus    `json:"health,omitempty"`
	Operation  *schemas.OperationState  `json:"operation,omitempty"`
	Conditions []schemas.Condition      `json:"conditions,omitempty"`
	Resources  *schemas.ResourceSummary `json:"resources,omitempty"`
	// AppliedGeneration is the newest generation the cluster acknowledged
	// as applied.
	AppliedGeneration int64 `json:"appliedGeneration"`
	// Rejected is the last rejection, if it is newer than the applied
	// generation.
	Rejected *Rejection `json:"rejected,omitempty"`
	// Local is the Application as its cluster last published it while it
	// owned it (autonomous mode), until the hub's first change to it is
	// applied: what `argosy app adopt` takes over.
	Local     *LocalApp `json:"local,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// LocalApp is an Application a cluster owns, as it published it.
type LocalApp struct {
	Project string            `json:"project"`
	Labels  map[string]string `json:"labels,omitempty"`
	Spec    json.RawMessage   `json:"spec"`
	// Generation is the Application object's own metadata.generation.
	Generation int64     `json:"generation"`
	EventID    string    `json:"eventId"`
	At         time.Time `json:"at"`
}

// Rejection is a config event a cluster refused.
type Rejection struct {
	Generation int64  `json:"generation"`
	EventID    string `json:"eventId"`
	Code       string `json:"code"`
	Reason     string `json:"reason,omitempty"`
}

// Health statuses a HealthChange records.
const (
	HealthDegraded = "Degraded"
	HealthHealthy  = "Healthy"
)

// HealthChange is an Application turning Degraded, or Healthy from any
// other health (status), at the log time of the status that said so: the
// start and end of what failed-deployment recovery time measures.
type HealthChange struct {
	AppKey
	Health  string    `json:"health"`
	At      time.Time `json:"at"`
	EventID string    `json:"eventId"`
}

// Ack is a cluster's acknowledgement of one config event (status), kept by
// event id so that the audit history can join the result to the change
// whichever arrives first.
type Ack struct {
	EventID string `json:"eventId"`
	Cluster string `json:"cluster"`
	Applied bool   `json:"applied"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Result is, for a sync or rollback, Argo CD's phase of it once it
	// ended (operation.completed): Succeeded, Failed, Error or Unknown;
	// Reason then holds Argo CD's message. Empty while it runs.
	Result string    `json:"result,omitempty"`
	At     time.Time `json:"at"`
}

// Call is one call to the hub's API (audit topic), kept by the event ids it
// appended so that each change can name its actor.
type Call struct {
	RequestID string    `json:"requestId"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	Outcome   string    `json:"outcome"`
	At        time.Time `json:"at"`
	EventIDs  []string  `json:"eventIds,omitempty"`
	// Via and Placement are the record's: the hub component that made the
	// call for Actor, and the placement change the call made or carried
	// out (schemas.AuditRecorded).
	Via       string                `json:"via,omitempty"`
	Placement *schemas.PlacementRef `json:"placement,omitempty"`
	// RecordID is the id of the call's own audit record (one per config
	// partition the call wrote to), which the history maps to the call as
	// it maps the events the call appended.
	RecordID string `json:"recordId,omitempty"`
}

// AuditEntry is one record of the audit history: a config change or an API
// call, chained by hash to the previous entry of the same partition.
type AuditEntry struct {
	// Topic, Partition and Offset place the event in the log; the chain
	// runs per topic and partition in offset order.
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	At        time.Time `json:"at"`
	EventID   string    `json:"eventId"`
	Type      string    `json:"type"`
	Cluster   string    `json:"cluster,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	// Generation is the object's generation after the change.
	Generation int64 `json:"generation,omitempty"`
	// Actor is known for API calls; for config changes it is joined at
	// read time from the Call that appended the event.
	Actor string `json:"actor,omitempty"`
	// Before and After are the object's spec around the change; After is
	// the request of an operation and the record of an API call. The chain
	// hashes them in canonical form (CanonicalJSON).
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Refused is why the fold refused the event as a replay (View.Replay):
	// the entry records that it was appended, and it changed nothing, so
	// it has no Before or After. Empty for every change.
	Refused string `json:"refused,omitempty"`
	// PrevHash and Hash chain the entry: see docs/projector.md.
	PrevHash string `json:"prevHash"`
	Hash     string `json:"hash"`
}

// Target is one cluster a placement's change was written to (config): the
// Application upsert the hub made on that cluster for one placement
// generation. A placement change's targets are the clusters it must reach
// before it is done.
type Target struct {
	AppKey
	// Placement is the placement's name; its namespace is the
	// Application's.
	Placement           string `json:"placement"`
	PlacementGeneration int64  `json:"placementGeneration"`
	// Generation is the Application's generation the upsert wrote.
	Generation int64     `json:"generation"`
	EventID    string    `json:"eventId"`
	At         time.Time `json:"at"`
}

// Deployment is one deployment record (deployments topic).
type Deployment struct {
	schemas.DeploymentRecorded
	EventID string `json:"eventId"`
}

// Gap is a deployment gap (deployments topic).
type Gap struct {
	schemas.DeploymentGap
	EventID string    `json:"eventId"`
	At      time.Time `json:"at"`
}
