package events

// The names an install's components take in Kafka besides its topics: the
// consumer groups and transactional ids. Each begins with the install's
// topic prefix, as its topics do (DefaultTopics), so that installs with
// different prefixes share a Kafka without sharing a name, and with no
// prefix each is the name installs have always used.

// HubTransactionalPrefix begins the transactional id of each of the hub's
// config-partition writers: prefix + "argosy-hub-config-".
func HubTransactionalPrefix(prefix string) string { return prefix + "argosy-hub-config-" }

// ProjectorGroup is the consumer group the projector replicas share:
// prefix + "argosy-projector".
func ProjectorGroup(prefix string) string { return prefix + "argosy-projector" }

// SpokeGroup is the group where cluster's spoke agent stores its config
// offsets: prefix + "argosy-spoke." + cluster.
func SpokeGroup(prefix, cluster string) string { return prefix + "argosy-spoke." + cluster }

// ReaderGroupPrefix begins the groups outside readers (an auditor's
// export, a data platform's consumers) may use: prefix + "argosy-reader.".
func ReaderGroupPrefix(prefix string) string { return prefix + "argosy-reader." }
