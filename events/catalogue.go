package events

import (
	"slices"

	"github.com/argosyproj/argosy/schemas"
)

// Family groups event types by who writes them and what they mean.
type Family string

// Families of the catalogue.
const (
	// FamilyConfig is desired state, written by the hub for one cluster.
	FamilyConfig Family = "config"
	// FamilyStatus is observed state, written by a cluster's agent.
	FamilyStatus Family = "status"
	// FamilyHub is the hub's own record of what it was asked to do.
	FamilyHub Family = "hub"
	// FamilyTrust is keys and the events that change who owns what.
	FamilyTrust Family = "trust"
	// FamilyQuery is live questions the hub asks a cluster's agent, and
	// their answers: read once, kept an hour, never folded into a view.
	FamilyQuery Family = "query"
)

// Topic is the role of a topic; Topics maps roles to topic names.
type Topic string

// Topic roles. See docs/design.md for partitioning, retention and compaction.
const (
	TopicConfig      Topic = "config"
	TopicStatus      Topic = "status"
	TopicDeployments Topic = "deployments"
	TopicAudit       Topic = "audit"
	TopicTrust       Topic = "trust"
	TopicDeadLetter  Topic = "deadletter"
	// TopicDesired is the compacted desired state of every cluster: the
	// latest config event of each object, written in the same transaction
	// as the config topic's copy. A new agent starts from it.
	TopicDesired Topic = "desired"
	// TopicPlacements holds the placements: Applications the hub keeps on
	// every cluster whose labels match a selector. Compacted, keyed by
	// "namespace/name", one partition.
	TopicPlacements Topic = "placements"
	// TopicQueries holds the hub's live questions to clusters, keyed and
	// partitioned by cluster as the config topic is.
	TopicQueries Topic = "queries"
	// TopicAnswers holds the clusters' answers, keyed by cluster.
	TopicAnswers Topic = "answers"
)

// Event types. Each is versioned: a change that is not backward compatible
// gets a new type (…v2) and both are read side by side until v1 is retired.
const (
	TypeApplicationUpserted = "io.argosy.config.application.upserted.v1"
	TypeApplicationDeleted  = "io.argosy.config.application.deleted.v1"
	TypeAppProjectUpserted  = "io.argosy.config.appproject.upserted.v1"
	TypeAppProjectDeleted   = "io.argosy.config.appproject.deleted.v1"
	TypeRepositoryUpserted  = "io.argosy.config.repository.upserted.v1"
	TypeRepositoryDeleted   = "io.argosy.config.repository.deleted.v1"
	TypeClusterRegistered   = "io.argosy.config.cluster.registered.v1"
	TypeClusterDeregistered = "io.argosy.config.cluster.deregistered.v1"
	TypeOperationRequested  = "io.argosy.config.operation.requested.v1"
	TypeHeartbeat           = "io.argosy.status.heartbeat.v1"
	TypeApplicationStatus   = "io.argosy.status.application.changed.v1"
	// TypeApplicationStatusBatch carries several of one cluster's deltas
	// under one signature.
	TypeApplicationStatusBatch = "io.argosy.status.applications.changed.v1"
	TypeConfigApplied          = "io.argosy.status.config.applied.v1"
	TypeConfigRejected         = "io.argosy.status.config.rejected.v1"
	TypeOperationCompleted     = "io.argosy.status.operation.completed.v1"
	TypeDeploymentRecorded     = "io.argosy.status.deployment.recorded.v1"
	TypeDeploymentGap          = "io.argosy.status.deployment.gap.v1"
	TypeAuditRecorded          = "io.argosy.hub.audit.recorded.v1"
	TypePlacementUpserted      = "io.argosy.hub.placement.upserted.v1"
	TypePlacementDeleted       = "io.argosy.hub.placement.deleted.v1"
	TypeKeyRegistered          = "io.argosy.trust.key.registered.v1"
	TypeKeyRotated             = "io.argosy.trust.key.rotated.v1"
	TypeKeyRevoked             = "io.argosy.trust.key.revoked.v1"
	TypeApplicationPublished   = "io.argosy.trust.application.published.v1"
	TypeDriftReverted          = "io.argosy.trust.drift.reverted.v1"
	TypeResyncRequested        = "io.argosy.trust.resync.requested.v1"
	TypeQueryRequested         = "io.argosy.query.requested.v1"
	TypeQueryAnswered          = "io.argosy.query.answered.v1"
)

// Spec describes one event type of the catalogue.
type Spec struct {
	Type   string
	Family Family
	// Topic is where events of this type are appended.
	Topic Topic
	// Signer is the role whose key must sign the event: schemas.RoleHub, or
	// schemas.RoleCluster for events a cluster's agent writes about itself.
	Signer string
	// Doc is one line for humans.
	Doc string
	// newData returns a pointer to a zero payload.
	newData func() any
}

// NewData returns a pointer to a zero value of the type's payload.
func (s Spec) NewData() any { return s.newData() }

// SchemaURL is the event's dataschema attribute, and the schema of its
// data when it carries none.
func (s Spec) SchemaURL() string { return schemas.URL(s.Type) }

// TypeNamesSchema reports whether events of the type are written without
// a dataschema attribute, since their type names their schema: the status
// family's (FamilyStatus), the most frequent events by far, which a spoke
// writes. Readers take the schema from the type whenever the attribute is
// absent, and check it whenever it is present.
func (s Spec) TypeNamesSchema() bool { return s.Family == FamilyStatus }

func entry[T any](typ string, fam Family, topic Topic, signer, doc string) Spec {
	return Spec{Type: typ, Family: fam, Topic: topic, Signer: signer, Doc: doc,
		newData: func() any { return new(T) }}
}

const (
	hub     = schemas.RoleHub
	cluster = schemas.RoleCluster
)

var catalogue = []Spec{
	entry[schemas.ApplicationUpserted](TypeApplicationUpserted, FamilyConfig, TopicConfig, hub,
		"The desired state of an Argo CD Application on one cluster."),
	entry[schemas.ApplicationDeleted](TypeApplicationDeleted, FamilyConfig, TopicConfig, hub,
		"An Application is no longer wanted on the cluster."),
	entry[schemas.AppProjectUpserted](TypeAppProjectUpserted, FamilyConfig, TopicConfig, hub,
		"The desired state of an Argo CD AppProject on one cluster."),
	entry[schemas.AppProjectDeleted](TypeAppProjectDeleted, FamilyConfig, TopicConfig, hub,
		"An AppProject is no longer wanted on the cluster."),
	entry[schemas.RepositoryUpserted](TypeRepositoryUpserted, FamilyConfig, TopicConfig, hub,
		"A repository and its credentials, sealed to the cluster."),
	entry[schemas.RepositoryDeleted](TypeRepositoryDeleted, FamilyConfig, TopicConfig, hub,
		"A repository is no longer wanted on the cluster."),
	entry[schemas.ClusterRegistered](TypeClusterRegistered, FamilyConfig, TopicConfig, hub,
		"A cluster joined the fleet."),
	entry[schemas.ClusterDeregistered](TypeClusterDeregistered, FamilyConfig, TopicConfig, hub,
		"A cluster left the fleet."),
	entry[schemas.OperationRequested](TypeOperationRequested, FamilyConfig, TopicConfig, hub,
		"Sync, refresh, roll back or terminate an Application."),
	entry[schemas.Heartbeat](TypeHeartbeat, FamilyStatus, TopicStatus, cluster,
		"The agent is alive, and how far it has read."),
	entry[schemas.ApplicationStatusChanged](TypeApplicationStatus, FamilyStatus, TopicStatus, cluster,
		"A compact delta of an Application's sync, health and operation status."),
	entry[schemas.ApplicationStatusBatch](TypeApplicationStatusBatch, FamilyStatus, TopicStatus, cluster,
		"The deltas of several of one cluster's Applications, under one signature."),
	entry[schemas.ConfigApplied](TypeConfigApplied, FamilyStatus, TopicStatus, cluster,
		"The agent applied a config event."),
	entry[schemas.ConfigRejected](TypeConfigRejected, FamilyStatus, TopicStatus, cluster,
		"The agent refused or failed to apply a config event, and why."),
	entry[schemas.OperationCompleted](TypeOperationCompleted, FamilyStatus, TopicStatus, cluster,
		"A sync or rollback the agent started on Argo CD ended, with Argo CD's result."),
	entry[schemas.DeploymentRecorded](TypeDeploymentRecorded, FamilyStatus, TopicDeployments, cluster,
		"One finished sync of an Application, for deployment history."),
	entry[schemas.DeploymentGap](TypeDeploymentGap, FamilyStatus, TopicDeployments, cluster,
		"Deployments of an Application that the agent may have missed, named instead of lost silently."),
	entry[schemas.AuditRecorded](TypeAuditRecorded, FamilyHub, TopicAudit, hub,
		"One call to the hub's API."),
	entry[schemas.PlacementUpserted](TypePlacementUpserted, FamilyHub, TopicPlacements, hub,
		"An Application to keep on every cluster whose labels match a selector."),
	entry[schemas.PlacementDeleted](TypePlacementDeleted, FamilyHub, TopicPlacements, hub,
		"A placement is gone; its Applications go by its prune policy."),
	entry[schemas.KeyRegistered](TypeKeyRegistered, FamilyTrust, TopicTrust, hub,
		"A public key became known."),
	entry[schemas.KeyRotated](TypeKeyRotated, FamilyTrust, TopicTrust, hub,
		"A key was replaced by a new one."),
	entry[schemas.KeyRevoked](TypeKeyRevoked, FamilyTrust, TopicTrust, hub,
		"A key stopped being valid."),
	entry[schemas.ApplicationPublished](TypeApplicationPublished, FamilyTrust, TopicStatus, cluster,
		"An Application owned by the cluster (autonomous mode), published to the hub."),
	entry[schemas.DriftReverted](TypeDriftReverted, FamilyTrust, TopicStatus, cluster,
		"The agent put back desired state that was changed outside Argosy."),
	entry[schemas.ResyncRequested](TypeResyncRequested, FamilyTrust, TopicStatus, cluster,
		"The agent lost part of the config log and asks for its desired state again."),
	entry[schemas.QueryRequested](TypeQueryRequested, FamilyQuery, TopicQueries, hub,
		"A live question about one Application: its resource tree, a resource's manifest, a Pod's logs."),
	entry[schemas.QueryAnswered](TypeQueryAnswered, FamilyQuery, TopicAnswers, cluster,
		"A cluster's answer to a live question, or why there is none."),
}

var byType = func() map[string]Spec {
	m := make(map[string]Spec, len(catalogue))
	for _, s := range catalogue {
		m[s.Type] = s
	}
	return m
}()

// Lookup returns the spec of an event type.
func Lookup(eventType string) (Spec, bool) {
	s, ok := byType[eventType]
	return s, ok
}

// Catalogue returns every event type, sorted by type.
func Catalogue() []Spec {
	out := slices.Clone(catalogue)
	slices.SortFunc(out, func(a, b Spec) int {
		switch {
		case a.Type < b.Type:
			return -1
		case a.Type > b.Type:
			return 1
		}
		return 0
	})
	return out
}
