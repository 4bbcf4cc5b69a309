package deploy

import (
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"
)

// metricsKey is the key of the JMX exporter's configuration in its
// ConfigMap.
const metricsKey = "kafka-metrics-config.yml"

// JMXRule is one rule of the Prometheus JMX exporter: an MBean attribute,
// written as domain<key=value, …><>attribute, that matches Pattern (the
// whole of it) becomes the metric Name, with $1… replaced by the groups.
type JMXRule struct {
	Pattern string            `json:"pattern"`
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// JMXRules are the brokers' and controllers' metrics: the few families an
// operator of Argosy's Kafka watches (under-replicated and offline
// partitions, partitions under min.insync.replicas, the active
// controller, request handler idleness, bytes and messages a second by
// topic, request rates and latencies, and the KRaft quorum), named as
// Strimzi's example configuration names them, so that its dashboards and
// alerts apply. The first rule that matches wins; a pattern is not
// anchored.
var JMXRules = []JMXRule{
	// Idle percentages, such as RequestHandlerAvgIdlePercent.
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)Percent\w*><>MeanRate`, Name: "kafka_$1_$2_$3_percent", Type: "GAUGE"},
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)Percent\w*><>Value`, Name: "kafka_$1_$2_$3_percent", Type: "GAUGE"},
	// Rates, such as BytesInPerSec by topic or RequestsPerSec by request.
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)PerSec\w*, (.+)=(.+), (.+)=(.+)><>Count`, Name: "kafka_$1_$2_$3_total", Type: "COUNTER",
		Labels: map[string]string{"$4": "$5", "$6": "$7"}},
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)PerSec\w*, (.+)=(.+)><>Count`, Name: "kafka_$1_$2_$3_total", Type: "COUNTER",
		Labels: map[string]string{"$4": "$5"}},
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)PerSec\w*><>Count`, Name: "kafka_$1_$2_$3_total", Type: "COUNTER"},
	// Gauges, such as UnderReplicatedPartitions, UnderMinIsrPartitionCount,
	// OfflinePartitionsCount and ActiveControllerCount, and per partition.
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Value`, Name: "kafka_$1_$2_$3", Type: "GAUGE",
		Labels: map[string]string{"$4": "$5", "$6": "$7"}},
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+)><>Value`, Name: "kafka_$1_$2_$3", Type: "GAUGE", Labels: map[string]string{"$4": "$5"}},
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+)><>Value`, Name: "kafka_$1_$2_$3", Type: "GAUGE"},
	// Latencies, such as TotalTimeMs by request.
	{Pattern: `kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*)><>(\d+)thPercentile`, Name: "kafka_$1_$2_$3", Type: "GAUGE",
		Labels: map[string]string{"$4": "$5", "quantile": "0.$6"}},
	// The KRaft quorum: its state, the others as gauges.
	{Pattern: `kafka.server<type=raft-metrics><>(current-state): (.+)`, Name: "kafka_server_raftmetrics_$1", Type: "UNTYPED",
		Labels: map[string]string{"$1": "$2"}},
	{Pattern: `kafka.server<type=raft-metrics><>(.+-total|.+-max):`, Name: "kafka_server_raftmetrics_$1", Type: "COUNTER"},
	{Pattern: `kafka.server<type=raft-metrics><>(.+):`, Name: "kafka_server_raftmetrics_$1", Type: "GAUGE"},
}

// jmxConfig is the JMX exporter's configuration: JMXRules, with every
// metric name in lower case.
type jmxConfig struct {
	LowercaseOutputName bool      `json:"lowercaseOutputName"`
	Rules               []jmxRule `json:"rules"`
}

// jmxRule is a JMXRule as the exporter reads it; the state rule sets the
// value 1.
type jmxRule struct {
	JMXRule `json:",inline"`
	Value   *int `json:"value,omitempty"`
}

// JMXConfig returns the JMX exporter's configuration file.
func JMXConfig() ([]byte, error) {
	c := jmxConfig{LowercaseOutputName: true}
	one := 1
	for _, r := range JMXRules {
		jr := jmxRule{JMXRule: r}
		if r.Type == "UNTYPED" {
			jr.Value = &one
		}
		c.Rules = append(c.Rules, jr)
	}
	return yaml.Marshal(c)
}

// metricsConfigMap names the ConfigMap of the JMX exporter's rules.
func (k Kafka) metricsConfigMap() string { return k.Name + "-kafka-metrics" }

// metricsConfig returns the ConfigMap the Kafka's metricsConfig names.
func (k Kafka) metricsConfig() (Object, error) {
	b, err := JMXConfig()
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	return Object{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": k.meta(k.metricsConfigMap(), map[string]string{"app.kubernetes.io/part-of": "argosy"}),
		"data":     map[string]any{metricsKey: string(b)},
	}, nil
}

// exporter returns the Kafka Exporter's spec: consumer lag and partition
// offsets of the install's topics and groups only, so that another
// install's or another team's names are neither shown nor counted.
func (k Kafka) exporter() map[string]any {
	return map[string]any{
		"topicRegex": k.ExporterTopicRegex(),
		"groupRegex": k.ExporterGroupRegex(),
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
		},
	}
}

// ExporterTopicRegex matches the install's topics and no other.
func (k Kafka) ExporterTopicRegex() string {
	return "^" + regexp.QuoteMeta(k.TopicPrefix+"argosy.") + `[a-z]+$`
}

// ExporterGroupRegex matches the install's groups: the projector's, the
// spokes' and the outside readers'.
func (k Kafka) ExporterGroupRegex() string {
	n := k.Names()
	return "^(" + regexp.QuoteMeta(n.ProjectorGroup) + "|" + regexp.QuoteMeta(n.SpokeGroup("")) + ".+|" + regexp.QuoteMeta(n.ReaderGroupPrefix) + ".+)$"
}
