package schemas_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/argosyproj/argosy/schemas"
)

// sample is a payload of one event type in two shapes: full sets every
// optional field (so its JSON has every property the schema lists) and
// minimal sets only the fields that are always encoded (so its JSON has
// exactly the required properties).
type sample struct {
	full, minimal any
}

var (
	t0 = time.Date(2025, time.March, 14, 9, 26, 53, 589_000_000, time.UTC)
	t1 = t0.Add(47 * time.Second)

	resource = schemas.Resource{Cluster: "prod-eu-1", Namespace: "argocd", Name: "guestbook", Generation: 42}
	// minResource leaves out Namespace, the only omitempty field, and keeps
	// the zero generation, which is still encoded.
	minResource = schemas.Resource{Cluster: "edge-7", Name: "guestbook"}

	appSpec = json.RawMessage(`{"project":"default",` +
		`"source":{"repoURL":"https://git.example.com/fleet/apps.git","path":"guestbook","targetRevision":"main"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"},` +
		`"syncPolicy":{"automated":{"prune":true,"selfHeal":true}}}`)
	projectSpec = json.RawMessage(`{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}]}`)
	emptySpec   = json.RawMessage(`{}`)

	labels = map[string]string{"team": "payments", "tier": "frontend"}
	// pubKey is a 32-byte public key in standard base64.
	pubKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
)

func ptr[T any](v T) *T { return &v }

// samples returns one sample per event type, keyed by type.
func samples() map[string]sample {
	key := schemas.KeyRegistered{
		KeyID: "cluster-prod-eu-1-signing-2", Owner: "prod-eu-1", Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: pubKey,
	}
	status := schemas.ApplicationStatusChanged{Resource: resource, Seq: 311, Full: true, Deleted: true,
		Sync:   &schemas.SyncStatus{Status: "Synced", Revision: "9f2c1e7"},
		Health: &schemas.HealthStatus{Status: "Degraded", Message: "Deployment guestbook exceeded its progress deadline"},
		Operation: &schemas.OperationState{Phase: "Succeeded", Message: "successfully synced (all tasks run)",
			StartedAt: t0, FinishedAt: ptr(t1)},
		Conditions: []schemas.Condition{{Type: "SyncError", Message: "one or more objects failed to apply"}},
		Resources: &schemas.ResourceSummary{Total: 3, ByKind: map[string]int{"ConfigMap": 2, "Deployment": 1},
			ByHealth: map[string]int{"Healthy": 2, "Degraded": 1},
			Items: []schemas.ResourceStatus{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook",
				Status: "Synced", Health: &schemas.HealthStatus{Status: "Degraded", Message: "progress deadline exceeded"}, Hook: true,
				RequiresPruning: true, SyncWave: -1}}}}
	return map[string]sample{
		"io.argosy.hub.placement.upserted.v1": {
			full: schemas.PlacementUpserted{Namespace: "argocd", Name: "guestbook", Generation: 3, Selector: "env=prod,region in (eu,us)",
				Prune: schemas.PruneDelete, Project: "default", Labels: labels, Annotations: map[string]string{"argosy.dev/owner": "team-payments"}, Spec: appSpec,
				Commit: &schemas.SourceCommit{Revision: "9f2c1e7a3b5d4c6e8f0a1b2c3d4e5f6a7b8c9d0e", CommittedAt: t0.Add(-time.Hour)},
				Actor:  "alice@example.com"},
			minimal: schemas.PlacementUpserted{Namespace: "argocd", Name: "guestbook", Prune: schemas.PruneOrphan, Project: "default", Spec: emptySpec},
		},
		"io.argosy.hub.placement.deleted.v1": {
			full:    schemas.PlacementDeleted{Namespace: "argocd", Name: "guestbook", Generation: 4, Prune: schemas.PruneDelete, Actor: "alice@example.com"},
			minimal: schemas.PlacementDeleted{Namespace: "argocd", Name: "guestbook", Prune: schemas.PruneOrphan},
		},
		"io.argosy.config.application.upserted.v1": {
			full: schemas.ApplicationUpserted{Resource: resource, Project: "default", Labels: labels,
				Annotations: map[string]string{"argosy.dev/owner": "team-payments"}, Spec: appSpec, Adopt: true,
				Commit: &schemas.SourceCommit{Revision: "9f2c1e7a3b5d4c6e8f0a1b2c3d4e5f6a7b8c9d0e", CommittedAt: t0.Add(-time.Hour)}},
			minimal: schemas.ApplicationUpserted{Resource: minResource, Project: "default", Spec: emptySpec},
		},
		"io.argosy.config.application.deleted.v1": {
			full:    schemas.ApplicationDeleted{Resource: resource, Cascade: true},
			minimal: schemas.ApplicationDeleted{Resource: minResource},
		},
		"io.argosy.config.appproject.upserted.v1": {
			full:    schemas.AppProjectUpserted{Resource: resource, Labels: labels, Spec: projectSpec},
			minimal: schemas.AppProjectUpserted{Resource: minResource, Spec: emptySpec},
		},
		"io.argosy.config.appproject.deleted.v1": {
			full:    schemas.AppProjectDeleted{Resource: resource},
			minimal: schemas.AppProjectDeleted{Resource: minResource},
		},
		"io.argosy.config.repository.upserted.v1": {
			full: schemas.RepositoryUpserted{Resource: resource, URL: "git@git.example.com:fleet/apps.git",
				Type: "git", Project: "payments", Credentials: &schemas.Sealed{
					KeyID: "cluster-prod-eu-1-sealing-1", Ciphertext: base64.StdEncoding.EncodeToString([]byte("sealed box bytes"))}},
			minimal: schemas.RepositoryUpserted{Resource: minResource, URL: "oci://registry.example.com/charts", Type: "oci"},
		},
		"io.argosy.config.repository.deleted.v1": {
			full:    schemas.RepositoryDeleted{Resource: resource, URL: "https://charts.example.com/stable"},
			minimal: schemas.RepositoryDeleted{Resource: minResource, URL: "https://charts.example.com/stable"},
		},
		"io.argosy.config.cluster.registered.v1": {
			full: schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "prod-eu-1", Namespace: "argocd", Name: "prod-eu-1", Generation: 1},
				Labels: map[string]string{"region": "eu-west-1"}, Partition: ptr(int32(3)),
				SigningKeyID: "cluster-prod-eu-1-signing-1", SealingKeyID: "cluster-prod-eu-1-sealing-1",
				JoinToken: &schemas.JoinToken{SHA256: strings.Repeat("ab", 32), ExpiresAt: t1}},
			minimal: schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "edge-7", Name: "edge-7"}},
		},
		"io.argosy.config.cluster.deregistered.v1": {
			full:    schemas.ClusterDeregistered{Resource: resource, Reason: "decommissioned"},
			minimal: schemas.ClusterDeregistered{Resource: minResource},
		},
		"io.argosy.config.operation.requested.v1": {
			full: schemas.OperationRequested{Resource: resource, RequestID: "req-01HQ3", Operation: schemas.OperationSync,
				RequestedBy: "alice@example.com", Revision: "9f2c1e7", Prune: true, DryRun: true, HistoryID: ptr[int64](17),
				RefreshType: "hard", ExpiresAt: ptr(time.Date(2026, 3, 2, 15, 10, 0, 0, time.UTC))},
			minimal: schemas.OperationRequested{Resource: minResource, RequestID: "req-01HQ4", Operation: schemas.OperationTerminate},
		},
		"io.argosy.status.heartbeat.v1": {
			full: schemas.Heartbeat{Cluster: "prod-eu-1", AgentVersion: "0.4.1", ArgoCDVersion: "v2.14.21",
				Mode: "managed", ConfigOffset: 1_204, Applications: 37, Seq: 9_001,
				ApplicationsBySync: map[string]int{"Synced": 35, "OutOfSync": 2}, ApplicationsByHealth: map[string]int{"Healthy": 36, "Degraded": 1},
				ConfigLag: 3},
			minimal: schemas.Heartbeat{Cluster: "edge-7", AgentVersion: "0.4.1", Mode: "autonomous"},
		},
		"io.argosy.status.application.changed.v1": {
			full:    status,
			minimal: schemas.ApplicationStatusChanged{Resource: minResource, Seq: 0},
		},
		"io.argosy.status.applications.changed.v1": {
			full:    schemas.ApplicationStatusBatch{Cluster: "prod-eu-1", Deltas: []schemas.ApplicationStatusChanged{status}},
			minimal: schemas.ApplicationStatusBatch{Cluster: "edge-7", Deltas: []schemas.ApplicationStatusChanged{{Resource: minResource}}},
		},
		"io.argosy.status.config.applied.v1": {
			full:    schemas.ConfigApplied{Resource: resource, EventID: "0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e6f", Offset: 1_203},
			minimal: schemas.ConfigApplied{Resource: minResource, EventID: "e-1"},
		},
		"io.argosy.status.config.rejected.v1": {
			full: schemas.ConfigRejected{Resource: resource, EventID: "0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e70", Offset: 1_204,
				Code: schemas.RejectApplyFailed, Reason: `admission webhook denied the request: field "spec.destination" is immutable`},
			minimal: schemas.ConfigRejected{Resource: minResource, EventID: "e-2", Code: schemas.RejectStale},
		},
		"io.argosy.status.operation.completed.v1": {
			full: schemas.OperationCompleted{Resource: resource, EventID: "0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e71", Offset: 1_205,
				RequestID: "4f7d1c2a-9b3e-4d5f-8a6b-7c8d9e0f1a2b", Operation: schemas.OperationRollback, Phase: schemas.OperationPhaseFailed,
				Message: "one or more objects failed to apply", Revision: "9f2c1e7", StartedAt: ptr(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
				FinishedAt: ptr(time.Date(2026, 3, 1, 12, 0, 42, 0, time.UTC))},
			minimal: schemas.OperationCompleted{Resource: minResource, EventID: "e-3", RequestID: "r-3", Operation: schemas.OperationSync,
				Phase: schemas.OperationPhaseUnknown},
		},
		"io.argosy.status.deployment.recorded.v1": {
			// A self-heal: the same revision and source as the deployment before.
			full: schemas.DeploymentRecorded{Resource: resource, DeploymentID: "dep-311", Revision: "9f2c1e7",
				PreviousRevision: "9f2c1e7", Phase: "Succeeded", Initiator: "automated", StartedAt: t0, FinishedAt: t1, Unchanged: true,
				Images: []string{"ghcr.example.com/payments/guestbook:1.8.2"}, Project: "payments", Labels: labels,
				AppUID: "5b8f0c2e-2f43-4f0e-9d54-0c9a3c1b7e21", HistoryID: ptr[int64](11), RevisionCommittedAt: ptr(t0.Add(-time.Hour))},
			minimal: schemas.DeploymentRecorded{Resource: minResource, DeploymentID: "dep-1", Revision: "41b0d9a",
				Phase: "Failed", StartedAt: t0, FinishedAt: t1},
		},
		"io.argosy.status.deployment.gap.v1": {
			full: schemas.DeploymentGap{Resource: resource, AppUID: "5b8f0c2e-2f43-4f0e-9d54-0c9a3c1b7e21",
				Reason: schemas.GapHistoryTrimmed, FromHistoryID: 12, ToHistoryID: ptr[int64](14), LastRecorded: ptr[int64](11),
				Detail: "history ids 12 to 14 left Argo CD's history before they were recorded"},
			minimal: schemas.DeploymentGap{Resource: minResource, Reason: schemas.GapDeletedUnobserved, FromHistoryID: 3},
		},
		"io.argosy.hub.audit.recorded.v1": {
			full: schemas.AuditRecorded{RequestID: "req-01HQ3", Actor: "alice@example.com", Action: "place",
				Method: "PLACE", Path: "/api/v1/placements/argocd/guestbook", Cluster: "prod-eu-1",
				Target: "placements/argocd/guestbook", Outcome: "allowed", StatusCode: 200, RemoteAddr: "192.0.2.10:53124",
				EventIDs: []string{"0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e6f"}, Via: schemas.ViaPlacement,
				Placement: &schemas.PlacementRef{Namespace: "argocd", Name: "guestbook", Generation: 4}},
			minimal: schemas.AuditRecorded{RequestID: "req-01HQ5", Actor: "anonymous", Action: "clusters.list",
				Method: "GET", Path: "/api/v1/clusters", Outcome: "denied", StatusCode: 401},
		},
		"io.argosy.trust.key.registered.v1": {
			full: key,
			minimal: schemas.KeyRegistered{KeyID: "hub-sealing-1", Owner: "argosy-hub", Role: schemas.RoleHub,
				Purpose: schemas.PurposeSealing, Algorithm: "x25519", PublicKey: pubKey},
		},
		"io.argosy.trust.key.rotated.v1": {
			full:    schemas.KeyRotated{KeyID: "cluster-prod-eu-1-signing-1", Next: key, OverlapSeconds: 600},
			minimal: schemas.KeyRotated{KeyID: "cluster-prod-eu-1-signing-1", Next: key},
		},
		"io.argosy.trust.key.revoked.v1": {
			full:    schemas.KeyRevoked{KeyID: "cluster-prod-eu-1-signing-1", Reason: "private key exposed in a build log"},
			minimal: schemas.KeyRevoked{KeyID: "cluster-prod-eu-1-signing-1"},
		},
		"io.argosy.trust.application.published.v1": {
			full:    schemas.ApplicationPublished{Resource: resource, Project: "default", Labels: labels, Spec: appSpec},
			minimal: schemas.ApplicationPublished{Resource: minResource, Project: "default", Spec: emptySpec},
		},
		"io.argosy.trust.drift.reverted.v1": {
			full: schemas.DriftReverted{Resource: resource, Kind: "Application",
				Fields: []string{"$.spec.source.targetRevision", "$.spec.syncPolicy"}, ConfigOffset: 1_188},
			minimal: schemas.DriftReverted{Resource: minResource, Kind: "AppProject"},
		},
		"io.argosy.trust.resync.requested.v1": {
			full: schemas.ResyncRequested{Cluster: "prod-eu-1", Reason: schemas.ResyncOutOfRange,
				LastOffset: 1_204, FirstAvailable: 5_000},
			minimal: schemas.ResyncRequested{Cluster: "edge-7", Reason: schemas.ResyncNewAgent, LastOffset: -1},
		},
		"io.argosy.query.requested.v1": {
			full: schemas.QueryRequested{Resource: resource, RequestID: "0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e70", Query: schemas.QueryManifest,
				RequestedBy: "alice@example.com", Target: &schemas.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "payments", Name: "guestbook"},
				Container: "web", TailLines: 100, SinceSeconds: 600, Timestamps: true, ExpiresAt: t1},
			minimal: schemas.QueryRequested{Resource: minResource, RequestID: "q-1", Query: schemas.QueryTree, ExpiresAt: t1},
		},
		"io.argosy.query.answered.v1": {
			full: schemas.QueryAnswered{Resource: resource, RequestID: "0195a7c2-4b1e-7c3a-9d2f-1a2b3c4d5e70", Query: schemas.QueryManifest,
				Code: schemas.QueryNotInTree, Error: "v1 Secret argocd/argocd-secret is not part of the Application",
				Truncated: true, Answer: json.RawMessage(`{}`)},
			minimal: schemas.QueryAnswered{Resource: minResource, RequestID: "q-1", Query: schemas.QueryTree},
		},
	}
}
