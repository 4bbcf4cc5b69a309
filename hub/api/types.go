// Package api is /api/v1 as its clients see it, the one contract of the
// hub's API and the projector's read API (schemas/openapi.yaml): the
// hub's request and response types, the one Error of both servers, and the
// one Client of both. The read API's answers are package projector/read's
// types, which sit below the hub. It links neither Argo CD's module nor
// the hub's server, so the argosy CLI stays small.
package api

import (
	"encoding/json"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

// Headers of the write API.
const (
	// HeaderIdempotencyKey names a write: a retried request with the same
	// key (from the same actor, about the same objects) is answered with
	// what the first one wrote, and writes nothing again.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderActAsUser and HeaderActAsGroup (one header per group) name the
	// Kubernetes user a call is made for, as a token with actFor grants
	// relays it (argosy-hub mirror's admission webhook): the call has the
	// role and scopes its grants give that user, and the audit names the
	// user and the token. Any other caller that sends them is refused.
	HeaderActAsUser  = "Argosy-Act-As-User"
	HeaderActAsGroup = "Argosy-Act-As-Group"
	// HeaderActAsSource says who authenticated that user: "kubernetes"
	// (the default: the Kubernetes API, for the admission webhook) or
	// "argocd" (an Argo CD API server's session, for the mirror's UI
	// proxy). The token's grants for that source decide.
	HeaderActAsSource = "Argosy-Act-As-Source"
	// HeaderIfMatch holds the generation a single-object write expects the
	// object to be at ("0" for an object that must not exist yet).
	HeaderIfMatch = "If-Match"
)

// Labels the hub puts on an Application a placement writes: the
// placement's name, and the placement generation it was written from.
const (
	LabelPlacement           = schemas.LabelPlacement
	LabelPlacementGeneration = schemas.LabelPlacementGeneration
)

// Kinds of objects, as they appear in paths and in Written.Kind.
const (
	KindApplications = "applications"
	KindAppProjects  = "appprojects"
	KindRepositories = "repositories"
	KindClusters     = "clusters"
	KindPlacements   = "placements"
)

// ApplyRequest applies one Argo CD Application or AppProject manifest to
// clusters: one event per cluster.
type ApplyRequest struct {
	// Clusters are the clusters to apply it to.
	Clusters []string `json:"clusters"`
	// Manifest is the whole object, as JSON (argoproj.io/v1alpha1).
	Manifest json.RawMessage `json:"manifest"`
	// ExpectedGeneration, with one cluster only, is the generation the
	// object must be at (0: it must not exist yet); else 409.
	ExpectedGeneration *int64 `json:"expectedGeneration,omitempty"`
	// Commit, for an Application, is the source commit this change
	// deploys and when it was committed (CI knows): spokes put the time on
	// the deployments of that revision, and reports measure lead time from
	// it.
	Commit *SourceCommit `json:"commit,omitempty"`
	// Adopt, for an Application on one cluster, takes over the
	// Application of that name that exists in the cluster without being
	// the hub's (one a spoke in autonomous mode owns): the spoke applies
	// Manifest to it in place, never re-creating it. 409 if the hub
	// manages it already.
	Adopt bool `json:"adopt,omitempty"`
}

// ClusterRequest registers a cluster, or changes its labels.
type ClusterRequest struct {
	Labels map[string]string `json:"labels,omitempty"`
	// Partition pins the cluster to a config partition.
	Partition *int32 `json:"partition,omitempty"`
	// SigningKey and SealingKey are the cluster's public keys, standard
	// base64 of 32 bytes (Ed25519 and X25519), as `argosy-spoke keygen`
	// writes them. Required when the cluster is first registered.
	SigningKey string `json:"signingKey,omitempty"`
	SealingKey string `json:"sealingKey,omitempty"`
	// ExpectedGeneration is the generation the registration must be at
	// (0: the cluster must not be registered yet); else 409.
	ExpectedGeneration *int64 `json:"expectedGeneration,omitempty"`
	// JoinTokenTTL is how long the join token of a registration without
	// keys is accepted, as a Go duration ("24h", the default).
	JoinTokenTTL string `json:"joinTokenTTL,omitempty"`
	// KeyOverlap is how long the keys a registration with new keys
	// replaces stay valid after the change, as a Go duration ("0s", the
	// default: they sign nothing from the change on; at most 168h).
	KeyOverlap string `json:"keyOverlap,omitempty"`
}

// JoinRequest is a spoke proving its cluster's join token and registering
// its public keys.
type JoinRequest struct {
	Token      string `json:"token"`
	SigningKey string `json:"signingKey"`
	SealingKey string `json:"sealingKey"`
}

// RepositoryRequest adds a repository to a cluster's Argo CD. Its
// credentials are sealed to the cluster's key before they leave the hub.
type RepositoryRequest struct {
	URL     string `json:"url"`
	Type    string `json:"type,omitempty"` // git (default) or helm
	Project string `json:"project,omitempty"`
	// Credentials are the Argo CD repository secret's other fields
	// (username, password, sshPrivateKey, tlsClientCertData, …).
	Credentials map[string]string `json:"credentials,omitempty"`
	// Sealed, instead of Credentials, are credentials sealed already to
	// the cluster's current sealing key, as an earlier event of the
	// repository carries them (argosy replay redrive sends them so): the
	// hub passes them on as they are, never opening them.
	Sealed             *SealedCredentials `json:"sealed,omitempty"`
	ExpectedGeneration *int64             `json:"expectedGeneration,omitempty"`
}

// SealedCredentials are credentials sealed to a cluster's sealing key, as
// a repository event's data carries them.
type SealedCredentials struct {
	// KeyID is the id of the sealing key they were sealed to.
	KeyID string `json:"keyId"`
	// Ciphertext is the sealed box, standard base64.
	Ciphertext string `json:"ciphertext"`
}

// OperationRequest asks a cluster to sync, refresh, roll back or
// terminate an Application.
type OperationRequest struct {
	Operation string `json:"operation"`
	Revision  string `json:"revision,omitempty"`
	Prune     bool   `json:"prune,omitempty"`
	DryRun    bool   `json:"dryRun,omitempty"`
	// HistoryID is the Argo CD history entry a rollback goes back to, 0
	// for the first; a rollback needs it.
	HistoryID   *int64 `json:"historyId,omitempty"`
	RefreshType string `json:"refreshType,omitempty"`
	// NotAfter, when set, is when the hub stops taking the operation: one
	// first asked later is refused (409), with nothing written, while one
	// it took in time is answered again under its idempotency key. It may
	// lie at most the hub's idempotency window ahead.
	NotAfter *time.Time `json:"notAfter,omitempty"`
}

// LiveAnswer is a cluster's answer to a live question about one of its
// Applications (GET …/tree, …/manifest, …/logs): for a tree, Argo CD's
// ApplicationTree; for a manifest, the live object, a Secret's values
// masked; for logs, {"lines": [...]}.
type LiveAnswer struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Query     string `json:"query"`
	RequestID string `json:"requestId"`
	// Truncated says the cluster cut the answer to its bound (logs: the
	// oldest lines went).
	Truncated bool            `json:"truncated,omitempty"`
	Answer    json.RawMessage `json:"answer"`
}

// Result is the answer to a write: the events it appended, durable when
// the answer comes, or, for a dry run, the events it would append.
type Result struct {
	Events []Written `json:"events"`
	// DryRun is set when nothing was written.
	DryRun bool `json:"dryRun,omitempty"`
	// Replayed is set when the request repeated an idempotency key whose
	// events were already written: they are the ones listed.
	Replayed bool `json:"replayed,omitempty"`
	// JoinToken, for a cluster registered without keys, is the one-time
	// token its spoke proves on first start (argosy-spoke run
	// --join-token), accepted until JoinTokenExpiresAt. It is shown once:
	// the log holds only its hash.
	JoinToken          string     `json:"joinToken,omitempty"`
	JoinTokenExpiresAt *time.Time `json:"joinTokenExpiresAt,omitempty"`
}

// Written is one event a write appended.
type Written struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Cluster    string `json:"cluster"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	Generation int64  `json:"generation"`
	// Partition and Offset place the event in the config topic (absent in
	// a dry run).
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
}

// Object is the hub's latest word on one object or cluster: its latest
// config event.
type Object struct {
	Cluster    string            `json:"cluster"`
	Kind       string            `json:"kind"`
	Namespace  string            `json:"namespace,omitempty"`
	Name       string            `json:"name"`
	Generation int64             `json:"generation"`
	Deleted    bool              `json:"deleted,omitempty"`
	Project    string            `json:"project,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	// URL is a repository's.
	URL string `json:"url,omitempty"`
	// Pin is the config partition a cluster's registration pins it to,
	// if any.
	Pin       *int32 `json:"pin,omitempty"`
	EventID   string `json:"eventId"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// ObjectList is a list of objects.
type ObjectList struct {
	Items []Object `json:"items"`
}

// Identity is who a token speaks for.
type Identity struct {
	Actor    string   `json:"actor"`
	Role     string   `json:"role"`
	Projects []string `json:"projects,omitempty"`
	Clusters string   `json:"clusters,omitempty"`
}

// Error is the body of every error answer of /api/v1, the hub's and the
// read API's alike (whose own answers set Error only). Fields, for a request that
// failed validation, name each field and what is wrong with it; Hint is
// the next command to run, when there is one.
type Error struct {
	Error  string       `json:"error"`
	Fields []FieldError `json:"fields,omitempty"`
	Hint   string       `json:"hint,omitempty"`
	// Generation is the object's current generation, on a conflict.
	Generation *int64 `json:"generation,omitempty"`
}

// FieldError is one field of a request that is wrong.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// PlacementRequest places an Application on every registered cluster whose
// labels match Selector: now, and as clusters join, gain or lose labels.
type PlacementRequest struct {
	// Selector is a Kubernetes label selector over the clusters' labels
	// ("env=prod,region in (eu,us)"); empty selects every cluster.
	Selector string `json:"selector"`
	// Prune is what becomes of the Application on a cluster that stops
	// matching, and everywhere when the placement is deleted: "delete"
	// (the default) removes it and its resources, "orphan" removes it and
	// leaves its resources running.
	Prune string `json:"prune,omitempty"`
	// Manifest is the Application, as JSON (argoproj.io/v1alpha1).
	Manifest json.RawMessage `json:"manifest"`
	// ExpectedGeneration is the generation the placement must be at (0: it
	// must not exist yet); else 409.
	ExpectedGeneration *int64 `json:"expectedGeneration,omitempty"`
	// Commit is as ApplyRequest's: each cluster's Application carries it.
	Commit *SourceCommit `json:"commit,omitempty"`
}

// SourceCommit is a source commit and when it was committed.
type SourceCommit struct {
	// Revision is the commit's full id: 40 (or, for SHA-256
	// repositories, 64) lowercase hexadecimal digits.
	Revision    string    `json:"revision"`
	CommittedAt time.Time `json:"committedAt"`
}

// Placement is a placement and its state on each cluster.
type Placement struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Selector   string `json:"selector"`
	Prune      string `json:"prune"`
	Project    string `json:"project"`
	Deleted    bool   `json:"deleted,omitempty"`
	// Clusters are its Application on each cluster; a listing with
	// clusters=false leaves them out, and States counts them.
	Clusters []PlacedCluster `json:"clusters,omitempty"`
	// States counts Clusters by state, a conflict's reason left out: what
	// a page of many placements over many clusters shows.
	States map[string]int `json:"states"`
	// Manifest is the Application the placement writes, as the manifest
	// a PlacementRequest takes: what an edit starts from. Absent once the
	// placement is deleted.
	Manifest json.RawMessage `json:"manifest,omitempty"`
}

// PlacedCluster is a placement's Application on one cluster.
type PlacedCluster struct {
	Cluster string `json:"cluster"`
	// Matches says whether the cluster's labels match the selector.
	Matches bool `json:"matches"`
	// Generation is the Application's generation there, and
	// PlacementGeneration the placement's generation it was written from.
	Generation          int64 `json:"generation,omitempty"`
	PlacementGeneration int64 `json:"placementGeneration,omitempty"`
	// State is placed, placing, pruning, or a conflict with an
	// Application of the same name the placement does not own.
	State string `json:"state"`
}

// PlacementList is a list of placements.
type PlacementList struct {
	Items []Placement `json:"items"`
}
