package deploy

import (
	"fmt"
	"regexp"

	"github.com/argosyproj/argosy/events"
)

// Names are one install's names in Kafka and Kubernetes, every one derived
// from its topic prefix, so that two installs with different prefixes
// share a Kafka without sharing a name (docs/deploy.md#other-sizes): the
// groups and transactional ids its components use, as package events names
// them, and its KafkaUsers, which Strimzi also gives their Secrets and
// certificates. A KafkaUser's name is a Kubernetes name, so the prefix is
// mapped once, here: lower case, with '.' and '_' as '-' ("prod." makes
// prod-argosy-hub). With no prefix each name is the one installs have
// always used.
type Names struct {
	// Prefix is the topic prefix.
	Prefix string
	// HubUser, ProjectorUser and ReaderUser name the KafkaUsers; a spoke's
	// is SpokeUser(cluster).
	HubUser, ProjectorUser, ReaderUser string
	// HubTransactionalPrefix begins the hub's transactional ids
	// (events.HubTransactionalPrefix).
	HubTransactionalPrefix string
	// ProjectorGroup is the projector replicas' consumer group
	// (events.ProjectorGroup).
	ProjectorGroup string
	// ReaderGroupPrefix begins the groups outside readers may use
	// (events.ReaderGroupPrefix).
	ReaderGroupPrefix string
}

// NamesFor returns the names of the install whose topics begin with prefix.
func NamesFor(prefix string) Names {
	return Names{
		Prefix:  prefix,
		HubUser: userName(prefix, "argosy-hub"), ProjectorUser: userName(prefix, "argosy-projector"), ReaderUser: userName(prefix, "argosy-reader"),
		HubTransactionalPrefix: events.HubTransactionalPrefix(prefix),
		ProjectorGroup:         events.ProjectorGroup(prefix),
		ReaderGroupPrefix:      events.ReaderGroupPrefix(prefix),
	}
}

// Names returns the names of k's install.
func (k Kafka) Names() Names { return NamesFor(k.TopicPrefix) }

// userName is the KafkaUser name of role in the install with prefix.
func userName(prefix, role string) string { return resourceName(prefix) + role }

// SpokeUser is the name of cluster's spoke's KafkaUser, and of the Secret
// with its client certificate.
func (n Names) SpokeUser(cluster string) string { return userName(n.Prefix, "argosy-spoke-"+cluster) }

// SpokeGroup is the group where cluster's spoke stores its offsets
// (events.SpokeGroup).
func (n Names) SpokeGroup(cluster string) string { return events.SpokeGroup(n.Prefix, cluster) }

// topicPrefix is what a topic prefix may be: a DNS label (lower-case
// letters, digits and '-', at most 63) and a dot. The KafkaUser names made
// from it write the dot as '-', and no other prefix maps to the same
// names: prod- or Prod. would name prod.'s users, and are refused.
var topicPrefix = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)?$`)

// Validate reports a prefix that cannot begin the names.
func (n Names) Validate() error {
	if !topicPrefix.MatchString(n.Prefix) {
		return fmt.Errorf("deploy: topic prefix %q: want a DNS label and a dot, such as prod. or team-a.: lower-case letters, digits and '-', at most 63, then '.'", n.Prefix)
	}
	return nil
}

// ACL is one simple-authorization rule of a KafkaUser: operations allowed
// on a resource (topic, group or transactionalId), by name or prefix.
type ACL struct {
	Type, Name string
	Prefix     bool
	Operations []string
	// Deny makes the rule refuse its operations, whatever another rule
	// allows.
	Deny bool
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
	rule := map[string]any{"resource": resource, "operations": ops}
	if a.Deny {
		rule["type"] = "deny"
	}
	return rule
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
// and follows the trust topic, appends audit records and reads them back
// for the dashboard sessions they end, and asks clusters live questions
// and reads their answers. It reads no status and never consumes in a
// group.
func (k Kafka) HubACLs() []ACL {
	acls := k.topicACLs(both, events.TopicConfig, events.TopicDesired, events.TopicPlacements, events.TopicTrust, events.TopicAudit)
	acls = append(acls, k.topicACLs(produce, events.TopicQueries)...)
	acls = append(acls, k.topicACLs(consume, events.TopicAnswers)...)
	return append(acls, ACL{Type: "transactionalId", Name: k.Names().HubTransactionalPrefix, Prefix: true, Operations: produce})
}

// ProjectorACLs are the projector's: it folds config, status, deployments
// and audit in its consumer group, follows the trust topic and
// dead-letters what it refuses.
func (k Kafka) ProjectorACLs() []ACL {
	acls := k.topicACLs(consume, events.TopicConfig, events.TopicStatus, events.TopicDeployments, events.TopicAudit, events.TopicTrust)
	acls = append(acls, k.topicACLs(produce, events.TopicDeadLetter)...)
	return append(acls, ACL{Type: "group", Name: k.Names().ProjectorGroup, Operations: consume})
}

// SpokeACLs are cluster's spoke's: it reads the config, desired-state,
// trust and queries topics, writes status, deployments, answers and dead
// letters, and stores its offsets in its own group. Kafka ACLs cannot
// confine it to its config partition: it may read every cluster's records
// (docs/deploy.md says why that is safe).
func (k Kafka) SpokeACLs(cluster string) []ACL {
	acls := k.topicACLs(consume, events.TopicConfig, events.TopicDesired, events.TopicTrust, events.TopicQueries)
	acls = append(acls, k.topicACLs(produce, events.TopicStatus, events.TopicDeployments, events.TopicAnswers, events.TopicDeadLetter)...)
	return append(acls, ACL{Type: "group", Name: k.Names().SpokeGroup(cluster), Operations: consume})
}

// ReaderACLs are an outside reader's, such as an auditor's export or a
// data platform's consumer: every Argosy topic but the answers, read
// only, and groups beginning with Names().ReaderGroupPrefix.
func (k Kafka) ReaderACLs() []ACL {
	return []ACL{
		{Type: "topic", Name: k.TopicPrefix + "argosy.", Prefix: true, Operations: consume},
		// Answers may hold live objects and log lines: the hub's alone.
		{Type: "topic", Name: events.DefaultTopics(k.TopicPrefix)[events.TopicAnswers], Operations: []string{"Read"}, Deny: true},
		{Type: "group", Name: k.Names().ReaderGroupPrefix, Prefix: true, Operations: consume},
	}
}

// clusterName is what a cluster name may be where it names a KafkaUser:
// a DNS label, as the hub requires of cluster names.
var clusterName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

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
	n := k.Names()
	return []Object{
		k.User(n.HubUser, k.HubACLs()),
		k.User(n.ProjectorUser, k.ProjectorACLs()),
		k.User(n.ReaderUser, k.ReaderACLs()),
	}
}

// Spoke returns cluster's spoke's KafkaUser, or an error if the name cannot
// be one.
func (k Kafka) Spoke(cluster string) (Object, error) {
	if !clusterName.MatchString(cluster) {
		return nil, fmt.Errorf("deploy: cluster name %q: want a DNS label (lower-case letters, digits and '-', at most 63)", cluster)
	}
	if err := k.Names().Validate(); err != nil {
		return nil, err
	}
	return k.User(k.Names().SpokeUser(cluster), k.SpokeACLs(cluster)), nil
}
