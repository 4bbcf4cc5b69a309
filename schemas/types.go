package schemas

import (
	"encoding/json"
	"time"
)

// Resource names the object an event is about: the cluster it targets (or
// comes from) and the object inside that cluster. Generation increases by one
// with every change the hub accepts for the object; readers drop an event whose
// generation is not newer than the one they already applied.
//
// It is embedded in most payloads, so its fields appear at the top level of the
// JSON data.
type Resource struct {
	Cluster    string `json:"cluster"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
}

// Sealed is a secret encrypted to one cluster's public sealing key (an X25519
// key, NaCl anonymous sealed box). Only the holder of the matching private key
// can open it.
type Sealed struct {
	// KeyID is the id of the sealing key the secret was encrypted to.
	KeyID string `json:"keyId"`
	// Ciphertext is the sealed box, standard base64.
	Ciphertext string `json:"ciphertext"`
}

// ApplicationUpserted is the data of io.argosy.config.application.upserted.v1:
// the desired state of one Argo CD Application on one cluster.
type ApplicationUpserted struct {
	Resource
	Project     string            `json:"project"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Spec is the Argo CD ApplicationSpec (argoproj.io/v1alpha1) as JSON.
	Spec json.RawMessage `json:"spec"`
	// Commit is the source commit this change deploys, when its author
	// says: spokes put its time on the deployments of that revision.
	Commit *SourceCommit `json:"commit,omitempty"`
	// Adopt takes over an Application that exists in the cluster without
	// being Argosy's (in autonomous mode, one the cluster owns): the spoke
	// applies Spec to it in place, and manages it from then on.
	Adopt bool `json:"adopt,omitempty"`
}

// SourceCommit is a source commit and when it was committed.
type SourceCommit struct {
	// Revision is the commit's full id (40 or 64 hexadecimal digits).
	Revision    string    `json:"revision"`
	CommittedAt time.Time `json:"committedAt"`
}

// ApplicationDeleted is the data of io.argosy.config.application.deleted.v1.
type ApplicationDeleted struct {
	Resource
	// Cascade deletes the application's resources too (Argo CD's
	// resources-finalizer); without it only the Application goes.
	Cascade bool `json:"cascade,omitempty"`
}

// AppProjectUpserted is the data of io.argosy.config.appproject.upserted.v1.
type AppProjectUpserted struct {
	Resource
	Labels map[string]string `json:"labels,omitempty"`
	// Spec is the Argo CD AppProjectSpec as JSON.
	Spec json.RawMessage `json:"spec"`
}

// AppProjectDeleted is the data of io.argosy.config.appproject.deleted.v1.
type AppProjectDeleted struct {
	Resource
}

// RepositoryUpserted is the data of io.argosy.config.repository.upserted.v1:
// a repository Argo CD may pull from, with credentials sealed to the target
// cluster.
type RepositoryUpserted struct {
	Resource
	URL     string `json:"url"`
	Type    string `json:"type"`
	Project string `json:"project,omitempty"`
	// Credentials, when set, is a sealed JSON object of Argo CD repository
	// secret fields (username, password, sshPrivateKey, ...).
	Credentials *Sealed `json:"credentials,omitempty"`
}

// RepositoryDeleted is the data of io.argosy.config.repository.deleted.v1.
type RepositoryDeleted struct {
	Resource
	URL string `json:"url"`
}

// ClusterRegistered is the data of io.argosy.config.cluster.registered.v1.
type ClusterRegistered struct {
	Resource
	Labels map[string]string `json:"labels,omitempty"`
	// Partition pins the cluster to one config partition. Unset means the
	// partition is murmur2(cluster) mod the partition count.
	Partition *int32 `json:"partition,omitempty"`
	// SigningKeyID and SealingKeyID name the cluster's keys, registered on the
	// trust topic.
	SigningKeyID string `json:"signingKeyId,omitempty"`
	SealingKeyID string `json:"sealingKeyId,omitempty"`
	// JoinToken is a one-time token the cluster's spoke proves to register
	// its keys, until it is used (only its hash is in the event).
	JoinToken *JoinToken `json:"joinToken,omitempty"`
}

// JoinToken is a cluster's one-time join token, as the log holds it.
type JoinToken struct {
	// SHA256 is the hex SHA-256 of the token.
	SHA256    string    `json:"sha256"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ClusterDeregistered is the data of io.argosy.config.cluster.deregistered.v1.
type ClusterDeregistered struct {
	Resource
	Reason string `json:"reason,omitempty"`
}

// Operation kinds of OperationRequested.
const (
	OperationSync      = "sync"
	OperationRefresh   = "refresh"
	OperationRollback  = "rollback"
	OperationTerminate = "terminate"
)

// OperationRequested is the data of io.argosy.config.operation.requested.v1:
// a one-off action on an Application.
type OperationRequested struct {
	Resource
	RequestID   string `json:"requestId"`
	Operation   string `json:"operation"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// Revision is the revision to sync to (sync only).
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
	// HistoryID is the Argo CD history entry to roll back to (rollback
	// only): Argo CD numbers them from 0, so 0 is its first deployment.
	// Every rollback the hub writes carries it; other operations do not.
	HistoryID *int64 `json:"historyId,omitempty"`
	// RefreshType is "normal" or "hard" (refresh only).
	RefreshType string `json:"refreshType,omitempty"`
	// ExpiresAt is when the operation stops being wanted: an agent that
	// reads it later rejects it as stale rather than perform it. Without
	// it, the agent bounds the operation's age itself.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Live questions the hub asks a cluster's agent about one Application
// (QueryRequested.Query).
const (
	// QueryTree asks for the Application's resource tree.
	QueryTree = "tree"
	// QueryManifest asks for one resource's live object.
	QueryManifest = "manifest"
	// QueryLogs asks for a Pod's recent log lines.
	QueryLogs = "logs"
	// QueryDiff asks for the Application's managed resources as Argo CD
	// last applied them against their live state (ApplicationDiff).
	QueryDiff = "diff"
)

// Why a cluster's agent answered a query with no answer
// (QueryAnswered.Code).
const (
	// QueryNotFound: the Application, or the resource, does not exist.
	QueryNotFound = "not_found"
	// QueryNotInTree: the resource is not part of the Application, and
	// the agent reads nothing else.
	QueryNotInTree = "not_in_tree"
	// QueryTooLarge: the answer would pass the bound of an answer.
	QueryTooLarge = "too_large"
	// QueryInvalid: the question is not one the agent can answer.
	QueryInvalid = "invalid"
	// QueryFailed: the cluster's API failed to answer.
	QueryFailed = "failed"
)

// MaxQueryAnswer bounds the JSON of QueryAnswered.Answer, so that the
// answer's event, envelope included, stays within an event's 512 KiB.
const MaxQueryAnswer = 448 << 10

// ResourceRef names one Kubernetes object of an Application's tree.
type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ApplicationTree is the answer to a tree question: an Application's
// live resources, in the JSON shape of Argo CD's ApplicationTree (v2.14),
// so that Argo CD's UI can show it.
type ApplicationTree struct {
	Nodes []TreeNode `json:"nodes"`
}

// TreeNode is one live resource of a tree, in the JSON shape of Argo CD's
// ResourceNode.
type TreeNode struct {
	TreeRef
	ParentRefs      []TreeRef   `json:"parentRefs,omitempty"`
	Info            []TreeInfo  `json:"info,omitempty"`
	ResourceVersion string      `json:"resourceVersion,omitempty"`
	Images          []string    `json:"images,omitempty"`
	Health          *TreeHealth `json:"health,omitempty"`
	CreatedAt       *time.Time  `json:"createdAt,omitempty"`
}

// ApplicationDiff is the answer to a diff question: one item per resource
// of the Application's .status.resources, in the JSON shape of Argo CD's
// ManagedResourcesResponse (v2.14), so that Argo CD's UI can show it.
//
// The target state is what Argo CD last applied to the cluster, as kubectl's
// last-applied-configuration annotation holds it (Argo CD's client-side
// apply writes it). The cluster holds nothing newer: a resource Git changed
// since its last sync is OutOfSync (SyncStatus) with a target that is the
// state before the change, and a resource applied server-side has no
// target state.
type ApplicationDiff struct {
	Items []ResourceDiff `json:"items"`
}

// ResourceDiff is one managed resource of a diff answer, in the JSON shape
// of Argo CD's ResourceDiff. States are JSON documents in strings, as Argo
// CD has them; a Secret's values are masked, an unchanged value and a
// changed one with masks of different lengths.
type ResourceDiff struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// TargetState is the object as Argo CD last applied it; empty when the
	// cluster holds no copy of it (applied server-side, or missing).
	TargetState string `json:"targetState,omitempty"`
	// NormalizedLiveState is the live object's values at the fields
	// TargetState sets, so that defaults and status do not show as
	// changes; the whole live object when there is no target state, and
	// "null" when it does not exist.
	NormalizedLiveState string `json:"normalizedLiveState"`
	// ResourceVersion is the live object's.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Modified says the live object differs from TargetState at a field it
	// sets, or does not exist; absent when false, as in Argo CD.
	Modified bool `json:"modified,omitempty"`
	// SyncStatus is the resource's sync status in the Application's
	// status (Synced, OutOfSync): as Argo CD last compared it with Git.
	SyncStatus string `json:"syncStatus,omitempty"`
}

// TreeRef names a node of a tree, or its parent.
type TreeRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

func (r TreeRef) String() string {
	gk := r.Kind
	if r.Group != "" {
		gk += "." + r.Group
	}
	if r.Namespace == "" {
		return gk + " " + r.Name
	}
	return gk + " " + r.Namespace + "/" + r.Name
}

// TreeInfo is one line of a node's information, as Argo CD's InfoItem.
type TreeInfo struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// TreeHealth is a resource's health as Argo CD assessed it.
type TreeHealth struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// QueryRequested is the data of io.argosy.query.requested.v1: a live
// question about one Application, which its cluster's agent answers once,
// on the answers topic, unless it reads the question after ExpiresAt.
type QueryRequested struct {
	Resource
	RequestID   string `json:"requestId"`
	Query       string `json:"query"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// Target is the resource a manifest or logs query is about (for
	// logs, a Pod).
	Target *ResourceRef `json:"target,omitempty"`
	// Container, TailLines and SinceSeconds narrow a logs query.
	Container    string `json:"container,omitempty"`
	TailLines    int64  `json:"tailLines,omitempty"`
	SinceSeconds int64  `json:"sinceSeconds,omitempty"`
	// Timestamps begins each line of a logs answer with the time its
	// container wrote it (RFC 3339 with nanoseconds) and a space.
	Timestamps bool      `json:"timestamps,omitempty"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// QueryAnswered is the data of io.argosy.query.answered.v1: a cluster's
// answer to one QueryRequested, or, with Code, why there is none.
type QueryAnswered struct {
	Resource
	RequestID string `json:"requestId"`
	Query     string `json:"query"`
	Code      string `json:"code,omitempty"`
	Error     string `json:"error,omitempty"`
	// Truncated says the answer was cut to its bound (logs: the oldest
	// lines went).
	Truncated bool `json:"truncated,omitempty"`
	// Answer is, for a tree, Argo CD's ApplicationTree; for a manifest,
	// the object (a Secret's values masked); for logs, {"lines": [...]},
	// and "timestamps": true when each line begins with its time.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// Heartbeat is the data of io.argosy.status.heartbeat.v1.
type Heartbeat struct {
	Cluster       string `json:"cluster"`
	AgentVersion  string `json:"agentVersion"`
	ArgoCDVersion string `json:"argocdVersion,omitempty"`
	// Mode is "managed" (the hub owns desired state) or "autonomous".
	Mode string `json:"mode"`
	// ConfigOffset is the next config offset the agent will read.
	ConfigOffset int64 `json:"configOffset"`
	Applications int   `json:"applications"`
	// Seq increases by one with every heartbeat since the agent started.
	Seq                  int64          `json:"seq"`
	ApplicationsBySync   map[string]int `json:"applicationsBySync,omitempty"`
	ApplicationsByHealth map[string]int `json:"applicationsByHealth,omitempty"`
	// ConfigLag is how many config records of the partition are not yet
	// applied.
	ConfigLag int64 `json:"configLag,omitempty"`
}

// SyncStatus is Argo CD's sync status of an Application.
type SyncStatus struct {
	Status   string `json:"status"`
	Revision string `json:"revision,omitempty"`
}

// HealthStatus is Argo CD's health of an Application.
type HealthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// OperationState is the state of the last Argo CD operation.
type OperationState struct {
	Phase      string     `json:"phase"`
	Message    string     `json:"message,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// ApplicationStatusChanged is the data of
// io.argosy.status.application.changed.v1: a compact delta of an
// Application's status. Only fields that changed since the previous delta with
// the same cluster, namespace and name are set, unless Full is true.
type ApplicationStatusChanged struct {
	Resource
	// Seq orders deltas of one application; a gap means a delta was lost and
	// the reader should wait for the next full status.
	Seq       int64           `json:"seq"`
	Full      bool            `json:"full,omitempty"`
	Deleted   bool            `json:"deleted,omitempty"`
	Sync      *SyncStatus     `json:"sync,omitempty"`
	Health    *HealthStatus   `json:"health,omitempty"`
	Operation *OperationState `json:"operation,omitempty"`
	// Conditions and Resources are sent in full whenever they change.
	Conditions []Condition      `json:"conditions,omitempty"`
	Resources  *ResourceSummary `json:"resources,omitempty"`
}

// MaxBatchDeltas is the most deltas one
// io.argosy.status.applications.changed.v1 event carries.
const MaxBatchDeltas = 100

// ApplicationStatusBatch is the data of
// io.argosy.status.applications.changed.v1: the deltas of several of one
// cluster's Applications, sent together under one signature. Each delta
// means what it would alone as io.argosy.status.application.changed.v1,
// and names the batch's cluster; readers fold them in order.
type ApplicationStatusBatch struct {
	Cluster string                     `json:"cluster"`
	Deltas  []ApplicationStatusChanged `json:"deltas"`
}

// Condition is one Argo CD Application condition.
type Condition struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

// ResourceSummary is a compact summary of an Application's resource tree.
type ResourceSummary struct {
	Total    int            `json:"total"`
	ByKind   map[string]int `json:"byKind,omitempty"`
	ByHealth map[string]int `json:"byHealth,omitempty"`
	// Items are the resources as the Application's status.resources
	// lists them, in its order, as long as they fit MaxResourceItems and
	// MaxResourceItemsBytes; Total counts them all, so fewer Items than
	// Total says the list was cut.
	Items []ResourceStatus `json:"items,omitempty"`
}

// The bounds of ResourceSummary.Items: how many, and the bytes of their
// JSON, so that a delta stays well inside an event.
const (
	MaxResourceItems      = 500
	MaxResourceItemsBytes = 64 << 10
)

// ResourceStatus is one resource of an Application, in the JSON shape of
// Argo CD's ResourceStatus (status.resources).
type ResourceStatus struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Status is its sync status: Synced, OutOfSync.
	Status          string        `json:"status,omitempty"`
	Health          *HealthStatus `json:"health,omitempty"`
	Hook            bool          `json:"hook,omitempty"`
	RequiresPruning bool          `json:"requiresPruning,omitempty"`
	SyncWave        int64         `json:"syncWave,omitempty"`
}

// Rejection codes of ConfigRejected.
const (
	RejectInvalid     = "invalid"
	RejectStale       = "stale"
	RejectUnverified  = "unverified"
	RejectApplyFailed = "apply_failed"
	RejectConflict    = "conflict"
	// RejectReplay marks a copy of a config record: its event was applied
	// from another offset, or it was appended after the operation it asks
	// for expired. The original's acknowledgement stands.
	RejectReplay = "replay"
)

// ConfigApplied is the data of io.argosy.status.config.applied.v1: the agent
// applied one config event.
type ConfigApplied struct {
	Resource
	// EventID and Offset name the config event being acknowledged.
	EventID string `json:"eventId"`
	Offset  int64  `json:"offset"`
}

// ConfigRejected is the data of io.argosy.status.config.rejected.v1: the agent
// refused or failed to apply one config event.
type ConfigRejected struct {
	Resource
	EventID string `json:"eventId"`
	Offset  int64  `json:"offset"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
}

// OperationCompleted is the data of io.argosy.status.operation.completed.v1:
// a sync or rollback that the agent started on Argo CD (and acknowledged
// with io.argosy.status.config.applied.v1 when Argo CD took it) has ended,
// with Argo CD's own result.
type OperationCompleted struct {
	Resource
	// EventID and Offset name the operation.requested event.
	EventID   string `json:"eventId"`
	Offset    int64  `json:"offset"`
	RequestID string `json:"requestId"`
	Operation string `json:"operation"`
	// Phase is Argo CD's: Succeeded, Failed, Error, or Unknown when a later
	// operation replaced the result before the agent read it.
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Revision is the revision Argo CD synced, when it says.
	Revision   string     `json:"revision,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Phases of OperationCompleted besides Argo CD's Succeeded, Failed and
// Error.
const (
	OperationPhaseSucceeded = "Succeeded"
	OperationPhaseFailed    = "Failed"
	OperationPhaseError     = "Error"
	OperationPhaseUnknown   = "Unknown"
)

// DeploymentRecorded is the data of io.argosy.status.deployment.recorded.v1: one
// finished Argo CD sync of an Application, for deployment history and reports.
type DeploymentRecorded struct {
	Resource
	// DeploymentID is unique per deployment and stable across redeliveries:
	// the Application's uid and its history id (or, for a sync that failed
	// and so has no history entry, the operation's start time).
	DeploymentID     string    `json:"deploymentId"`
	Revision         string    `json:"revision"`
	PreviousRevision string    `json:"previousRevision,omitempty"`
	Phase            string    `json:"phase"`
	Initiator        string    `json:"initiator,omitempty"`
	StartedAt        time.Time `json:"startedAt"`
	FinishedAt       time.Time `json:"finishedAt"`
	Images           []string  `json:"images,omitempty"`
	// Project is the Application's AppProject, for reports by project.
	Project string `json:"project,omitempty"`
	// Labels are the Application's labels, for reports by label.
	Labels map[string]string `json:"labels,omitempty"`
	// AppUID is the uid of the Application object; history ids start again
	// when an Application is deleted and created anew.
	AppUID string `json:"appUid,omitempty"`
	// HistoryID is the id of the Application's status.history entry; absent
	// for failed syncs, which Argo CD keeps no history entry for.
	HistoryID *int64 `json:"historyId,omitempty"`
	// RevisionCommittedAt is when Revision was committed, where the change
	// that asked for it said (ApplicationUpserted.Commit); nil otherwise.
	RevisionCommittedAt *time.Time `json:"revisionCommittedAt,omitempty"`
	// Unchanged is set when the sync deployed the same revision from the
	// same source settings as the Application's deployment before it: a
	// re-sync that changed nothing, or a self-heal that put drifted
	// resources back. Reports leave such syncs out of the deployments they
	// count. Absent when the agent did not know the deployment before.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Deployment gap reasons.
const (
	// GapHistoryTrimmed: entries left Argo CD's history (revisionHistoryLimit)
	// before the agent recorded them, for example during a long outage.
	GapHistoryTrimmed = "history_trimmed"
	// GapNotObserved: the agent first saw the Application after some of its
	// history was already gone (the agent was installed later, or its state
	// was lost).
	GapNotObserved = "not_observed"
	// GapDeletedUnobserved: the Application was deleted while the agent was
	// away, so whatever it deployed after the last record is unknown.
	GapDeletedUnobserved = "deleted_unobserved"
)

// DeploymentGap is the data of io.argosy.status.deployment.gap.v1: the agent
// cannot prove that it recorded every deployment of an Application, and says
// which history ids may be missing instead of staying silent.
type DeploymentGap struct {
	Resource
	AppUID string `json:"appUid,omitempty"`
	Reason string `json:"reason"`
	// FromHistoryID is the first history id that may be missing.
	FromHistoryID int64 `json:"fromHistoryId"`
	// ToHistoryID is the last one; absent when it is unknown (the
	// Application is gone).
	ToHistoryID *int64 `json:"toHistoryId,omitempty"`
	// LastRecorded is the last history id the agent did record, absent for
	// none.
	LastRecorded *int64 `json:"lastRecorded,omitempty"`
	Detail       string `json:"detail,omitempty"`
}

// AuditRecorded is the data of io.argosy.hub.audit.recorded.v1: one call to the
// hub's API, allowed or not.
type AuditRecorded struct {
	RequestID  string `json:"requestId"`
	Actor      string `json:"actor"`
	Action     string `json:"action"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Cluster    string `json:"cluster,omitempty"`
	Target     string `json:"target,omitempty"`
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"statusCode"`
	RemoteAddr string `json:"remoteAddr,omitempty"`
	// EventIDs are the ids of the events the call appended.
	EventIDs []string `json:"eventIds,omitempty"`
	// Via names who made the call on Actor's behalf: ViaPlacement when the
	// hub places a placement's Applications, Actor then being the author
	// of the placement change it carries out; or the token that relayed
	// the call of a Kubernetes user (Actor k8s:USER), argosy-hub mirror's
	// admission webhook relaying a change made in the mirror cluster.
	// Empty for a call the actor made. The hub sets both; no request can.
	Via string `json:"via,omitempty"`
	// Placement is the placement change the call made (applying or
	// deleting a placement) or carried out (placing its Applications).
	Placement *PlacementRef `json:"placement,omitempty"`
}

// ViaPlacement is the Via of the calls the hub makes to place a
// placement's Applications.
const ViaPlacement = "hub/placement"

// PlacementRef names one change of a placement: the placement and the
// generation the change gave it.
type PlacementRef struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
}

// Prune policies of a placement: what becomes of the Application on a
// cluster that stops matching (or of every one, when the placement is
// deleted).
const (
	// PruneDelete deletes the Application and its resources.
	PruneDelete = "delete"
	// PruneOrphan deletes the Application and leaves its resources
	// running, unmanaged.
	PruneOrphan = "orphan"
)

// Labels the hub puts on each Application a placement writes, in the
// labels of application.upserted.v1: the placement's name (its namespace
// is the Application's), and the placement generation the Application was
// written from. Readers group one placement change's Applications across
// clusters by them.
const (
	LabelPlacement           = "argosy.dev/placement"
	LabelPlacementGeneration = "argosy.dev/placement-generation"
)

// PlacementUpserted is the data of io.argosy.hub.placement.upserted.v1: an
// Application to keep on every registered cluster whose labels match
// Selector, now and as clusters join, change labels or leave.
type PlacementUpserted struct {
	// Namespace and Name name the placement and the Application it places.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Generation increases by one with every change the hub accepts for
	// the placement.
	Generation int64 `json:"generation"`
	// Selector is a Kubernetes label selector over the clusters' labels.
	Selector string `json:"selector"`
	// Prune is PruneDelete or PruneOrphan.
	Prune       string            `json:"prune"`
	Project     string            `json:"project"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Spec is the Application's spec, as on each cluster.
	Spec json.RawMessage `json:"spec"`
	// Commit is the source commit the placement deploys, where its author
	// said; each cluster's upsert carries it.
	Commit *SourceCommit `json:"commit,omitempty"`
	// Actor is who made this change of the placement, as the audit of the
	// call names them; the hub sets it from the caller's credential. The
	// hub's calls that place the Applications are audited as Actor's, via
	// ViaPlacement. Empty in placements written before it was recorded.
	Actor string `json:"actor,omitempty"`
}

// PlacementDeleted is the data of io.argosy.hub.placement.deleted.v1: the
// placement is gone, and its Applications go by its prune policy.
type PlacementDeleted struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Prune      string `json:"prune"`
	// Actor is who deleted the placement, as PlacementUpserted.Actor.
	Actor string `json:"actor,omitempty"`
}

// Key roles and purposes used by the trust events.
const (
	RoleHub        = "hub"
	RoleCluster    = "cluster"
	PurposeSigning = "signing"
	PurposeSealing = "sealing"
)

// KeyRegistered is the data of io.argosy.trust.key.registered.v1.
type KeyRegistered struct {
	KeyID string `json:"keyId"`
	// Owner is the cluster name, or the hub's name for hub keys.
	Owner   string `json:"owner"`
	Role    string `json:"role"`
	Purpose string `json:"purpose"`
	// Algorithm is "ed25519" for signing keys and "x25519" for sealing keys.
	Algorithm string `json:"algorithm"`
	// PublicKey is the raw public key, standard base64.
	PublicKey string `json:"publicKey"`
}

// KeyRotated is the data of io.argosy.trust.key.rotated.v1: Next replaces
// KeyID. KeyID stops being valid OverlapSeconds after the rotation's log
// time (at it, when zero); Next is valid from it.
type KeyRotated struct {
	KeyID string        `json:"keyId"`
	Next  KeyRegistered `json:"next"`
	// OverlapSeconds is how long KeyID stays valid after the rotation,
	// as the operator chose it.
	OverlapSeconds int64 `json:"overlapSeconds,omitempty"`
}

// KeyRevoked is the data of io.argosy.trust.key.revoked.v1. The key stays
// known; events appended after the revocation's log time are rejected.
type KeyRevoked struct {
	KeyID  string `json:"keyId"`
	Reason string `json:"reason"`
}

// ApplicationPublished is the data of io.argosy.trust.application.published.v1:
// an Application owned by the spoke (autonomous mode), published to the hub.
type ApplicationPublished struct {
	Resource
	Project string            `json:"project"`
	Labels  map[string]string `json:"labels,omitempty"`
	Spec    json.RawMessage   `json:"spec"`
}

// DriftReverted is the data of io.argosy.trust.drift.reverted.v1: the agent
// found an object changed outside Argosy and put the desired state back.
type DriftReverted struct {
	Resource
	Kind string `json:"kind"`
	// Fields are the JSON paths that differed.
	Fields []string `json:"fields,omitempty"`
	// ConfigOffset is the config event whose state was restored.
	ConfigOffset int64 `json:"configOffset"`
}

// Resync reasons.
const (
	ResyncDataLoss    = "data_loss"
	ResyncOutOfRange  = "offset_out_of_range"
	ResyncNewAgent    = "new_agent"
	ResyncOperatorReq = "operator"
)

// ResyncRequested is the data of io.argosy.trust.resync.requested.v1: the agent
// lost part of the config log (retention, truncation, a restore) and asks the
// hub to re-append the cluster's desired state.
type ResyncRequested struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
	// LastOffset is the last config offset the agent applied, -1 for none.
	LastOffset int64 `json:"lastOffset"`
	// FirstAvailable is the earliest config offset the broker still has.
	FirstAvailable int64 `json:"firstAvailable"`
}

// ClusterName returns the cluster the payload is about; readers check that it
// matches the event's signed subject.
func (r Resource) ClusterName() string { return r.Cluster }

// Object returns the Resource a payload embeds.
func (r Resource) Object() Resource { return r }

// ClusterName returns the cluster the batch comes from. Readers check that
// each delta names it too (ForeignDelta).
func (b ApplicationStatusBatch) ClusterName() string { return b.Cluster }

// ForeignDelta returns the index of the first delta that names another
// cluster than the batch, or -1 when every delta names the batch's.
func (b ApplicationStatusBatch) ForeignDelta() int {
	for i, d := range b.Deltas {
		if d.Cluster != b.Cluster {
			return i
		}
	}
	return -1
}

// StatusDeltas returns the Application status deltas that data, an event's
// decoded data, carries: itself when it is one delta, a batch's deltas in
// order, none otherwise.
func StatusDeltas(data any) []*ApplicationStatusChanged {
	switch d := data.(type) {
	case *ApplicationStatusChanged:
		return []*ApplicationStatusChanged{d}
	case *ApplicationStatusBatch:
		out := make([]*ApplicationStatusChanged, len(d.Deltas))
		for i := range d.Deltas {
			out[i] = &d.Deltas[i]
		}
		return out
	}
	return nil
}

// ClusterName returns the cluster the heartbeat comes from.
func (h Heartbeat) ClusterName() string { return h.Cluster }

// ClusterName returns the cluster asking for a resync.
func (r ResyncRequested) ClusterName() string { return r.Cluster }
