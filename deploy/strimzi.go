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
	"errors"
	"fmt"
	"maps"
	"regexp"
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
	// TopicPrefix begins every Argosy topic's name (--topic-prefix), and
	// every other name of the install (Names).
	TopicPrefix string
	// ConfigPartitions and StatusPartitions size the per-cluster topics.
	// The config topic's count is fixed once agents run (docs/kafka.md).
	ConfigPartitions, StatusPartitions int32
	// Replicas is the number of brokers and of controllers, and every
	// topic's replication factor; MinISR is min.insync.replicas.
	Replicas, MinISR int
	// Version is the Kafka version Strimzi runs, MetadataVersion the KRaft
	// metadata version; both pinned, so that upgrading Strimzi does not
	// upgrade Kafka unasked.
	Version, MetadataVersion string
	// RackTopologyKey is the node label whose value is a broker's rack
	// (broker.rack): replicas of a partition are spread over racks, and
	// consumers that say their rack may fetch from a replica in it.
	// Empty: no rack awareness.
	RackTopologyKey string
	// Broker and Controller size the two node pools' pods.
	Broker, Controller Pool
	// Metrics adds the brokers' JMX Prometheus exporter, with its rules in
	// a ConfigMap, and the Kafka Exporter, limited to the install's topics
	// and groups.
	Metrics bool
}

// Pool is the size of the pods of one node pool.
type Pool struct {
	// CPURequest, CPULimit, MemoryRequest and MemoryLimit are Kubernetes
	// quantities; an empty one is not set.
	CPURequest, CPULimit, MemoryRequest, MemoryLimit string
	// Heap is the JVM's -Xms and -Xmx (as 4g or 512m); empty: Strimzi's
	// default, a share of the memory limit.
	Heap string
	// Storage is each node's volume size; StorageClass its storage class,
	// empty for the Kubernetes cluster's default.
	Storage, StorageClass string
}

// DefaultKafka is the cluster deploy/strimzi holds: three brokers and three
// controllers spread over zones, writes acknowledged by two replicas, 64
// partitions for the per-cluster topics (docs/bench.md#partitions), Kafka
// 4.3.1, and metrics. docs/deploy.md#other-sizes says why each size.
func DefaultKafka() Kafka {
	return Kafka{
		Name: "argosy", Namespace: "kafka", ConfigPartitions: 64, StatusPartitions: 64, Replicas: 3, MinISR: 2,
		Version: "4.3.1", MetadataVersion: "4.3-IV0", RackTopologyKey: "topology.kubernetes.io/zone",
		Broker:     Pool{CPURequest: "2", CPULimit: "4", MemoryRequest: "8Gi", MemoryLimit: "8Gi", Heap: "4g", Storage: "100Gi"},
		Controller: Pool{CPURequest: "500m", CPULimit: "1", MemoryRequest: "2Gi", MemoryLimit: "2Gi", Heap: "1g", Storage: "20Gi"},
		Metrics:    true,
	}
}

// Validate reports what the resources cannot be made with, all at once.
func (k Kafka) Validate() error {
	var errs []error
	if k.ConfigPartitions < 1 || k.StatusPartitions < 1 || k.Replicas < 1 || k.MinISR < 1 || k.MinISR > k.Replicas {
		errs = append(errs, errors.New("deploy: want at least one partition and replica, and 1 ≤ min.insync.replicas ≤ replicas"))
	}
	if k.Name == "" || k.Namespace == "" {
		errs = append(errs, errors.New("deploy: the Kafka needs a name and a namespace"))
	}
	if k.Version == "" || k.MetadataVersion == "" {
		errs = append(errs, errors.New("deploy: pin the Kafka version and the metadata version"))
	}
	for name, p := range map[string]Pool{"broker": k.Broker, "controller": k.Controller} {
		if p.Storage == "" {
			errs = append(errs, fmt.Errorf("deploy: the %s pool needs a storage size", name))
		}
		if p.Heap != "" && !heap.MatchString(p.Heap) {
			errs = append(errs, fmt.Errorf("deploy: %s heap %q: want a size such as 4g or 512m", name, p.Heap))
		}
	}
	return errors.Join(append(errs, k.Names().Validate())...)
}

// heap is what Strimzi takes as -Xms and -Xmx.
var heap = regexp.MustCompile(`^[0-9]+[mMgG]?$`)

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
// authorization; with Metrics, the ConfigMap of the brokers' JMX exporter
// rules after them.
func (k Kafka) Cluster() ([]Object, error) {
	isr := strconv.Itoa(k.MinISR)
	config := map[string]any{
		"auto.create.topics.enable":                "false",
		"default.replication.factor":               k.Replicas,
		"min.insync.replicas":                      k.MinISR,
		"offsets.topic.replication.factor":         k.Replicas,
		"transaction.state.log.replication.factor": k.Replicas,
		"transaction.state.log.min.isr":            isr,
		"unclean.leader.election.enable":           "false",
	}
	spec := map[string]any{
		"version": k.Version, "metadataVersion": k.MetadataVersion,
		// tls serves the hub and projector inside the cluster;
		// external, the spokes in the workload clusters.
		"listeners": []any{
			map[string]any{"name": "tls", "port": 9093, "type": "internal", "tls": true,
				"authentication": map[string]any{"type": "tls"}},
			map[string]any{"name": "external", "port": 9094, "type": "loadbalancer", "tls": true,
				"authentication": map[string]any{"type": "tls"}},
		},
		"authorization": map[string]any{"type": "simple"},
		"config":        config,
	}
	if k.RackTopologyKey != "" {
		spec["rack"] = map[string]any{"type": "topology-label", "topologyKey": k.RackTopologyKey}
		// A consumer that sets client.rack fetches from a replica in its
		// rack (KIP-392).
		config["replica.selector.class"] = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
	}
	kafka := Object{
		"apiVersion": StrimziAPI, "kind": "Kafka",
		"metadata": k.meta(k.Name, nil),
		"spec": map[string]any{
			"kafka":          spec,
			"entityOperator": map[string]any{"topicOperator": map[string]any{}, "userOperator": map[string]any{}},
		},
	}
	out := []Object{kafka, k.pool("controller", k.Controller), k.pool("broker", k.Broker)}
	if k.Metrics {
		spec["metricsConfig"] = map[string]any{"type": "jmxPrometheusExporter", "valueFrom": map[string]any{
			"configMapKeyRef": map[string]any{"name": k.metricsConfigMap(), "key": metricsKey}}}
		kafka["spec"].(map[string]any)["kafkaExporter"] = k.exporter()
		cm, err := k.metricsConfig()
		if err != nil {
			return nil, err
		}
		out = append(out, cm)
	}
	return out, nil
}

// pool returns the KafkaNodePool of role, sized by p; with rack
// awareness, its pods are spread evenly over the racks.
func (k Kafka) pool(role string, p Pool) Object {
	volume := map[string]any{"id": 0, "type": "persistent-claim", "size": p.Storage, "deleteClaim": false, "kraftMetadata": "shared"}
	if p.StorageClass != "" {
		volume["class"] = p.StorageClass
	}
	spec := map[string]any{
		"replicas": k.Replicas,
		"roles":    []any{role},
		"storage":  map[string]any{"type": "jbod", "volumes": []any{volume}},
	}
	if r := resources(p); len(r) > 0 {
		spec["resources"] = r
	}
	if p.Heap != "" {
		spec["jvmOptions"] = map[string]any{"-Xms": p.Heap, "-Xmx": p.Heap}
	}
	if k.RackTopologyKey != "" {
		spec["template"] = map[string]any{"pod": map[string]any{"topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 1, "topologyKey": k.RackTopologyKey, "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"strimzi.io/cluster": k.Name, "strimzi.io/pool-name": role}},
		}}}}
	}
	return Object{"apiVersion": StrimziAPI, "kind": "KafkaNodePool", "metadata": k.meta(role, k.clusterLabel()), "spec": spec}
}

// resources returns p's requests and limits, leaving out the empty ones.
func resources(p Pool) map[string]any {
	out := map[string]any{}
	for _, r := range []struct{ kind, cpu, memory string }{{"requests", p.CPURequest, p.MemoryRequest}, {"limits", p.CPULimit, p.MemoryLimit}} {
		m := map[string]any{}
		if r.cpu != "" {
			m["cpu"] = r.cpu
		}
		if r.memory != "" {
			m["memory"] = r.memory
		}
		if len(m) > 0 {
			out[r.kind] = m
		}
	}
	return out
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
	if err := k.Validate(); err != nil {
		return nil, err
	}
	spoke, err := k.Spoke(ExampleCluster)
	if err != nil {
		return nil, err
	}
	cluster, err := k.Cluster()
	if err != nil {
		return nil, err
	}
	files := []struct {
		name, about string
		objs        []Object
	}{
		{"kafka.yaml", "The Kafka cluster: KRaft controllers and brokers in two KafkaNodePools,\nTLS listeners with client certificates (internal, and a load balancer for\nspokes elsewhere), simple authorization, rack awareness, and the metrics'\nConfigMap.", cluster},
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
