package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topics maps topic roles to topic names.
type Topics map[Topic]string

// DefaultTopics returns the standard topic names, each prefixed with prefix
// ("" for none).
func DefaultTopics(prefix string) Topics {
	return Topics{
		TopicConfig:      prefix + "argosy.config",
		TopicStatus:      prefix + "argosy.status",
		TopicDeployments: prefix + "argosy.deployments",
		TopicAudit:       prefix + "argosy.audit",
		TopicTrust:       prefix + "argosy.trust",
		TopicDeadLetter:  prefix + "argosy.deadletter",
		TopicDesired:     prefix + "argosy.desired",
		TopicPlacements:  prefix + "argosy.placements",
		TopicQueries:     prefix + "argosy.queries",
		TopicAnswers:     prefix + "argosy.answers",
	}
}

// TopicSpec is how one topic is created. docs/design.md says why.
type TopicSpec struct {
	Partitions int32
	Configs    map[string]string
}

// TopicPlan returns the creation spec of every topic role. configPartitions
// and statusPartitions size the per-cluster topics.
func TopicPlan(configPartitions, statusPartitions int32) map[Topic]TopicSpec {
	const (
		forever  = "-1"
		week     = "604800000"
		month    = "2592000000"
		hour     = "3600000"
		maxBytes = "1048576"
	)
	base := func(retention string) map[string]string {
		return map[string]string{
			"cleanup.policy":                 "delete",
			"retention.ms":                   retention,
			"retention.bytes":                "-1",
			"message.timestamp.type":         "LogAppendTime",
			"max.message.bytes":              maxBytes,
			"min.insync.replicas":            "1",
			"unclean.leader.election.enable": "false",
		}
	}
	compacted := func(c map[string]string) map[string]string {
		c["cleanup.policy"] = "compact"
		return c
	}
	return map[Topic]TopicSpec{
		TopicConfig:      {Partitions: configPartitions, Configs: base(forever)},
		TopicStatus:      {Partitions: statusPartitions, Configs: base(week)},
		TopicDeployments: {Partitions: statusPartitions, Configs: base(forever)},
		TopicAudit:       {Partitions: 1, Configs: base(forever)},
		TopicTrust:       {Partitions: 1, Configs: base(forever)},
		TopicDeadLetter:  {Partitions: 1, Configs: base(month)},
		TopicDesired:     {Partitions: configPartitions, Configs: compacted(base(forever))},
		TopicPlacements:  {Partitions: 1, Configs: compacted(base(forever))},
		TopicQueries:     {Partitions: configPartitions, Configs: base(hour)},
		TopicAnswers:     {Partitions: statusPartitions, Configs: base(hour)},
	}
}

// EnsureTopics creates the topics of plan that do not exist yet, with
// replication factor rf (-1 for the broker default) and minISR as
// min.insync.replicas. Existing topics are left alone.
func EnsureTopics(ctx context.Context, adm *kadm.Client, topics Topics, plan map[Topic]TopicSpec, rf int16, minISR int) error {
	var errs []error
	var names []string
	for role, spec := range plan {
		name, ok := topics[role]
		if !ok {
			continue
		}
		cfg := make(map[string]*string, len(spec.Configs))
		for k, v := range spec.Configs {
			cfg[k] = kadm.StringPtr(v)
		}
		cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(minISR))
		_, err := adm.CreateTopic(ctx, spec.Partitions, rf, cfg, name)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, err))
		}
		names = append(names, name)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return waitForLeaders(ctx, adm, names)
}

// waitForLeaders waits, up to a minute, until the broker's metadata shows
// every partition of the topics with a leader: a topic created a moment ago
// answers UNKNOWN_TOPIC_OR_PARTITION until then, and clients that produce
// or list offsets at once would fail.
func waitForLeaders(ctx context.Context, adm *kadm.Client, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		td, err := adm.ListTopics(ctx, names...)
		ready := err == nil
		for _, n := range names {
			t, ok := td[n]
			ready = ready && ok && t.Err == nil && len(t.Partitions) > 0
			for _, p := range t.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v have no leader yet: %w", names, errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
	}
}

// Partitioner chooses partitions the way Apache Kafka's Java client does:
// murmur2 of the record key, high bit masked, modulo the partition count. Any
// Kafka client that uses that default computes the same partition for a
// cluster name. Pins override it for named keys: a pinned cluster always
// lands on its pinned partition (while the topic has that many).
type Partitioner struct {
	pins  map[string]int32
	kafka kgo.TopicPartitioner
}

// NewPartitioner returns a partitioner with optional pins from key (cluster
// name) to partition.
func NewPartitioner(pins map[string]int32) *Partitioner {
	return &Partitioner{pins: pins, kafka: kgo.StickyKeyPartitioner(nil).ForTopic("")}
}

// PartitionOf returns the partition of key among n partitions.
func (p *Partitioner) PartitionOf(key string, n int32) int32 {
	if pin, ok := p.pins[key]; ok && pin >= 0 && pin < n {
		return pin
	}
	return int32(p.kafka.Partition(&kgo.Record{Key: []byte(key)}, int(n)))
}

// ForTopic implements kgo.Partitioner.
func (p *Partitioner) ForTopic(string) kgo.TopicPartitioner { return p }

// RequiresConsistency implements kgo.TopicPartitioner: a key always maps to
// the same partition, even while that partition is unavailable.
func (p *Partitioner) RequiresConsistency(*kgo.Record) bool { return true }

// Partition implements kgo.TopicPartitioner. A key of the form
// "cluster/…" (the desired-state topic's) goes where the cluster's own key
// goes, so that a cluster's records share a partition on every topic.
func (p *Partitioner) Partition(r *kgo.Record, n int) int {
	key, _, _ := strings.Cut(string(r.Key), "/")
	return int(p.PartitionOf(key, int32(n)))
}
