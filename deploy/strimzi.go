// Package deploy owns Argosy's Kubernetes deployment: the Strimzi resources
// (a Kafka in KRaft mode, its node pools, a KafkaTopic per Argosy topic and
// a KafkaUser per role), generated here from events.TopicPlan and the
// roles' ACLs so that manifests and code cannot disagree, and the Helm
// chart in helm/argosy. `go generate ./deploy/` writes deploy/strimzi;
// `argosy cluster register --print-manifests` prints a cluster's spoke
// KafkaUser and install command from the same code. docs/deploy.md is the
// guide.
package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
)

//go:generate go run ./internal/gen -dir strimzi

// StrimziAPI is the API version of every Strimzi resource here (Strimzi
// 1.2).
const StrimziAPI = "kafka.strimzi.io/v1"

// Kafka describes the Kafka cluster the Strimzi resources make.
type Kafka struct {
	// Name is the Kafka resource's name; Strimzi names the bootstrap
	// Service <Name>-kafka-bootstrap and the cluster CA Secret
	// <Name>-cluster-ca-cert after it.
	Name, Namespace string
	// TopicPrefix begins every Argosy topic's name (--topic-prefix).
	TopicPrefix string
	// ConfigPartitions and StatusPartitions size the per-cluster topics.
	// The config topic's count is fixed once agents run (docs/kafka.md).
	ConfigPartitions, StatusPartitions int32
	// Replicas is the number of brokers and of controllers, and every
	// topic's replication factor; MinISR is min.insync.replicas.
	Replicas, MinISR int
}

// DefaultKafka is the cluster deploy/strimzi holds: three brokers and three
// controllers, writes acknowledged by two replicas, 64 partitions for the
// per-cluster topics (docs/bench.md#partitions).
func DefaultKafka() Kafka {
	return Kafka{Name: "argosy", Namespace: "kafka", ConfigPartitions: 64, StatusPartitions: 64, Replicas: 3, MinISR: 2}
}

// Object is one Kubernetes object, as its YAML would hold it.
type Object = map[string]any

func (k Kafka) meta(name string, labels map[string]string) map[string]any {
	m := map[string]any{"name": name, "namespace": k.Namespace}
	if len(labels) > 0 {
		m["labels"] = labels
	}
	return m
}

// clusterLabel ties a KafkaTopic or KafkaUser to its Kafka: the topic and
// user operators watch resources with it.
func (k Kafka) clusterLabel() map[string]string {
	return map[string]string{"strimzi.io/cluster": k.Name}
}

// Cluster returns the Kafka resource and its two KafkaNodePools, one of
// controllers and one of brokers, in KRaft mode, with two TLS listeners
// that authenticate clients by certificate (an internal one, and a load
// balancer for the spokes of other clusters) and simple (ACL)
// authorization.
func (k Kafka) Cluster() []Object {
	isr := strconv.Itoa(k.MinISR)
	kafka := Object{
		"apiVersion": StrimziAPI, "kind": "Kafka",
		"metadata": k.meta(k.Name, nil),
		"spec": map[string]any{
			"kafka": map[string]any{
				// tls serves the hub and projector inside the cluster;
				// external, the spokes in the workload clusters.
				"listeners": []any{
					map[string]any{"name": "tls", "port": 9093, "type": "internal", "tls": true,
						"authentication": map[string]any{"type": "tls"}},
					map[string]any{"name": "external", "port": 9094, "type": "loadbalancer", "tls": true,
						"authentication": map[string]any{"type": "tls"}},
				},
				"authorization": map[string]any{"type": "simple"},
				"config": map[string]any{
					"auto.create.topics.enable":                "false",
					"default.replication.factor":               k.Replicas,
					"min.insync.replicas":                      k.MinISR,
					"offsets.topic.replication.factor":         k.Replicas,
					"transaction.state.log.replication.factor": k.Replicas,
					"transaction.state.log.min.isr":            isr,
					"unclean.leader.election.enable":           "false",
				},
			},
			"entityOperator": map[string]any{"topicOperator": map[string]any{}, "userOperator": map[string]any{}},
		},
	}
	pool := func(name, role, size string) Object {
		return Object{
			"apiVersion": StrimziAPI, "kind": "KafkaNodePool",
			"metadata": k.meta(name, k.clusterLabel()),
			"spec": map[string]any{
				"replicas": k.Replicas,
				"roles":    []any{role},
				"storage": map[string]any{"type": "jbod", "volumes": []any{map[string]any{
					"id": 0, "type": "persistent-claim", "size": size, "deleteClaim": false, "kraftMetadata": "shared",
				}}},
			},
		}
	}
	return []Object{kafka, pool("controller", "controller", "20Gi"), pool("broker", "broker", "100Gi")}
}

// Topics returns a KafkaTopic for each Argosy topic, as events.TopicPlan
// makes it: partitions, retention, compaction, timestamp type and maximum
// message size, with min.insync.replicas set to MinISR. Kubernetes names
// may not hold every character a topic name may, so each sets topicName.
func (k Kafka) Topics() []Object {
	names := events.DefaultTopics(k.TopicPrefix)
	plan := events.TopicPlan(k.ConfigPartitions, k.StatusPartitions)
	var out []Object
	for _, role := range slices.Sorted(maps.Keys(plan)) {
		spec := plan[role]
		cfg := map[string]any{}
		for key, v := range spec.Configs {
			cfg[key] = v
		}
		cfg["min.insync.replicas"] = strconv.Itoa(k.MinISR)
		out = append(out, Object{
			"apiVersion": StrimziAPI, "kind": "KafkaTopic",
			"metadata": k.meta(resourceName(names[role]), k.clusterLabel()),
			"spec": map[string]any{
				"topicName":  names[role],
				"partitions": spec.Partitions,
				"replicas":   k.Replicas,
				"config":     cfg,
			},
		})
	}
	return out
}

// resourceName turns a topic name into a Kubernetes name.
func resourceName(topic string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(strings.ToLower(topic))
}

// YAML writes objs as one multi-document YAML file, after a comment
// header (lines without the leading "# ").
func YAML(header string, objs ...Object) ([]byte, error) {
	var buf bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		buf.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// ExampleCluster is the cluster whose spoke KafkaUser deploy/strimzi holds
// as an example; `argosy cluster register NAME --print-manifests` prints
// any cluster's.
const ExampleCluster = "example"

// StrimziFiles returns deploy/strimzi's files for k, by name.
func StrimziFiles(k Kafka) (map[string][]byte, error) {
	const generated = "Generated by `go generate ./deploy/` from package deploy (events.TopicPlan\nand the roles' ACLs): do not edit. docs/deploy.md explains it.\n"
	spoke, err := k.Spoke(ExampleCluster)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name, about string
		objs        []Object
	}{
		{"kafka.yaml", "The Kafka cluster: KRaft controllers and brokers in two KafkaNodePools,\nTLS listeners with client certificates (internal, and a load balancer for\nspokes elsewhere), simple authorization.", k.Cluster()},
		{"topics.yaml", "Argosy's topics, as events.TopicPlan makes them.", k.Topics()},
		{"users.yaml", "The hub's, the projector's and an outside reader's KafkaUsers, least\nprivilege.", k.Users()},
		{"spoke-user-example.yaml", "The KafkaUser of the spoke of cluster \"" + ExampleCluster + "\": one per cluster, printed by\n`argosy cluster register NAME --print-manifests`.", []Object{spoke}},
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := YAML(f.about+"\n"+generated, f.objs...)
		if err != nil {
			return nil, err
		}
		out[f.name] = b
	}
	return out, nil
}
