package deploy

import (
	"fmt"
	"regexp"

	"github.com/argosyproj/argosy/events"
)

// The consumer groups and transactional ids the components use, as their
// packages name them (a test holds these to hub, projector and spoke).
const (
	// HubTransactionalPrefix begins the hub's transactional ids
	// (hub.DefaultTransactionalPrefix).
	HubTransactionalPrefix = "argosy-hub-config-"
	// ProjectorGroup is the projector replicas' consumer group
	// (projector.DefaultGroup).
	ProjectorGroup = "argosy-projector"
	// SpokeGroupPrefix begins each spoke's group, where it stores its
	// config offsets (spoke.Group).
	SpokeGroupPrefix = "argosy-spoke."
	// ReaderGroupPrefix begins the groups outside readers (the data
	// platform's consumers) may use.
	ReaderGroupPrefix = "argosy-reader."
)

// The KafkaUsers' names. A spoke's is SpokeUser(cluster).
const (
	HubUser       = "argosy-hub"
	ProjectorUser = "argosy-projector"
	ReaderUser    = "argosy-reader"
)

// ACL is one simple-authorization rule of a KafkaUser: operations allowed
// on a resource (topic, group or transactionalId), by name or prefix.
type ACL struct {
	Type, Name string
	Prefix     bool
	Operations []string
}

func (a ACL) object() map[string]any {
	resource := map[string]any{"type": a.Type}
	if a.Type != "cluster" {
		resource["name"], resource["patternType"] = a.Name, "literal"
		if a.Prefix {
			resource["patternType"] = "prefix"
		}
	}
	ops := make([]any, len(a.Operations))
	for i, op := range a.Operations {
		ops[i] = op
	}
	return map[string]any{"resource": resource, "operations": ops}
}

// The operation sets the roles need. Describe covers metadata and offset
// listings; Read covers fetching and, on a group, committing offsets.
// Write on a topic also lets a producer be idempotent (no IdempotentWrite
// on the cluster is needed since Kafka 3.0).
var (
	consume = []string{"Read", "Describe"}
	produce = []string{"Write", "Describe"}
	both    = []string{"Read", "Write", "Describe"}
)

func (k Kafka) topicACLs(ops []string, roles ...events.Topic) []ACL {
	names := events.DefaultTopics(k.TopicPrefix)
	out := make([]ACL, 0, len(roles))
	for _, r := range roles {
		out = append(out, ACL{Type: "topic", Name: names[r], Operations: ops})
	}
	return out
}

// HubACLs are the hub's: it appends config changes, desired state and
// placements in transactions and reads them back (its ledger), publishes
// and follows the trust topic, and appends audit records and reads them
// back for the dashboard sessions they end. It reads no status and never
// consumes in a group.
func (k Kafka) HubACLs() []ACL {
	acls := k.topicACLs(both, events.TopicConfig, events.TopicDesired, events.TopicPlacements, events.TopicTrust, events.TopicAudit)
	return append(acls, ACL{Type: "transactionalId", Name: HubTransactionalPrefix, Prefix: true, Operations: produce})
}

// ProjectorACLs are the projector's: it folds config, status, deployments
// and audit in its consumer group, follows the trust topic and
// dead-letters what it refuses.
func (k Kafka) ProjectorACLs() []ACL {
	acls := k.topicACLs(consume, events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit, events.TopicTrust)
	acls = append(acls, k.topicACLs(produce, events.TopicDeadLetter)...)
	return append(acls, ACL{Type: "group", Name: ProjectorGroup, Operations: consume})
}

// SpokeACLs are cluster's spoke's: it reads the config, desired-state and
// trust topics, writes status, deployments and dead letters, and stores its
// offsets in its own group. Kafka ACLs cannot confine it to its config
// partition: it may read every cluster's records (docs/deploy.md says why
// that is safe).
func (k Kafka) SpokeACLs(cluster string) []ACL {
	acls := k.topicACLs(consume, events.TopicConfig, events.TopicDesired, events.TopicTrust)
	acls = append(acls, k.topicACLs(produce, events.TopicStatus, events.TopicDeployments, events.TopicDeadLetter)...)
	return append(acls, ACL{Type: "group", Name: SpokeGroupPrefix + cluster, Operations: consume})
}

// ReaderACLs are an outside reader's, such as an auditor's export or a
// data platform's consumer: every Argosy topic, read only, and groups
// named ReaderGroupPrefix….
func (k Kafka) ReaderACLs() []ACL {
	return []ACL{
		{Type: "topic", Name: k.TopicPrefix + "argosy.", Prefix: true, Operations: consume},
		{Type: "group", Name: ReaderGroupPrefix, Prefix: true, Operations: consume},
	}
}

// clusterName is what a cluster name may be where it names a KafkaUser:
// a DNS label, as the hub requires of cluster names.
var clusterName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// SpokeUser is the name of cluster's spoke's KafkaUser, and of the Secret
// with its client certificate.
func SpokeUser(cluster string) string { return "argosy-spoke-" + cluster }

// User returns a KafkaUser authenticated by a TLS client certificate
// (Strimzi's user operator issues it into a Secret of the same name) with
// acls.
func (k Kafka) User(name string, acls []ACL) Object {
	rules := make([]any, len(acls))
	for i, a := range acls {
		rules[i] = a.object()
	}
	return Object{
		"apiVersion": StrimziAPI, "kind": "KafkaUser",
		"metadata": k.meta(name, k.clusterLabel()),
		"spec": map[string]any{
			"authentication": map[string]any{"type": "tls"},
			"authorization":  map[string]any{"type": "simple", "acls": rules},
		},
	}
}

// Users returns the hub's, the projector's and the outside reader's
// KafkaUsers.
func (k Kafka) Users() []Object {
	return []Object{
		k.User(HubUser, k.HubACLs()),
		k.User(ProjectorUser, k.ProjectorACLs()),
		k.User(ReaderUser, k.ReaderACLs()),
	}
}

// Spoke returns cluster's spoke's KafkaUser, or an error if the name cannot
// be one.
func (k Kafka) Spoke(cluster string) (Object, error) {
	if !clusterName.MatchString(cluster) {
		return nil, fmt.Errorf("deploy: cluster name %q: want a DNS label (lower-case letters, digits and '-', at most 63)", cluster)
	}
	return k.User(SpokeUser(cluster), k.SpokeACLs(cluster)), nil
}
