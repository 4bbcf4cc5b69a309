// Command gen writes the Strimzi manifests of package deploy: `go generate
// ./deploy/` writes deploy/strimzi with the defaults; the flags make them
// for another Kafka (docs/deploy.md#other-sizes).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argosyproj/argosy/deploy"
)

func main() {
	k := deploy.DefaultKafka()
	fs := flag.CommandLine
	dir := fs.String("dir", "strimzi", "directory to write the Strimzi manifests into")
	cp, sp := bindFlags(fs, &k)
	flag.Parse()
	k.ConfigPartitions, k.StatusPartitions = int32(*cp), int32(*sp)
	if err := run(*dir, k); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// bindFlags binds k's fields to fs, with k's values as the defaults; the
// partition counts are returned to be set after parsing.
func bindFlags(fs *flag.FlagSet, k *deploy.Kafka) (cp, sp *int) {
	fs.StringVar(&k.Name, "name", k.Name, "the Kafka resource's name")
	fs.StringVar(&k.Namespace, "namespace", k.Namespace, "the Kafka's namespace")
	fs.StringVar(&k.TopicPrefix, "topic-prefix", k.TopicPrefix,
		"prefix of Argosy's topic names (--topic-prefix of the components); it begins the KafkaUsers', groups' and transactional ids' names too")
	cp = fs.Int("config-partitions", int(k.ConfigPartitions), "partitions of the config and desired-state topics; fixed once spokes run")
	sp = fs.Int("status-partitions", int(k.StatusPartitions), "partitions of the status and deployments topics")
	fs.IntVar(&k.Replicas, "replicas", k.Replicas, "brokers, controllers and every topic's replication factor")
	fs.IntVar(&k.MinISR, "min-insync-replicas", k.MinISR, "min.insync.replicas of the brokers and every topic")
	fs.StringVar(&k.Version, "kafka-version", k.Version, "the Kafka version Strimzi runs (Strimzi 1.2: 4.2.0, 4.2.1, 4.3.0 or 4.3.1)")
	fs.StringVar(&k.MetadataVersion, "metadata-version", k.MetadataVersion, "the KRaft metadata version (4.3-IV0 for Kafka 4.3, 4.2-IV1 for 4.2); raise it after a Kafka upgrade")
	fs.StringVar(&k.RackTopologyKey, "rack-topology-key", k.RackTopologyKey,
		"node label whose value is a broker's rack: replicas and node pool pods spread over its values; empty: no rack awareness")
	fs.BoolVar(&k.Metrics, "metrics", k.Metrics, "the brokers' JMX Prometheus exporter (rules in a ConfigMap) and the Kafka Exporter")
	bindPool(fs, "broker", &k.Broker)
	bindPool(fs, "controller", &k.Controller)
	return cp, sp
}

// bindPool binds the flags -<role>-cpu, -<role>-memory, … to p.
func bindPool(fs *flag.FlagSet, role string, p *deploy.Pool) {
	for _, f := range []struct {
		name, usage string
		v           *string
	}{
		{"cpu", "CPU request of each %s", &p.CPURequest},
		{"cpu-limit", "CPU limit of each %s; empty: none", &p.CPULimit},
		{"memory", "memory request of each %s; keep it equal to the limit", &p.MemoryRequest},
		{"memory-limit", "memory limit of each %s; empty: none", &p.MemoryLimit},
		{"heap", "JVM -Xms and -Xmx of each %s, about half its memory: Kafka reads through the page cache, which the rest holds; empty: Strimzi's default", &p.Heap},
		{"storage", "persistent volume size of each %s, which also holds its KRaft metadata", &p.Storage},
		{"storage-class", "storage class of the %s volumes; empty: the Kubernetes cluster's default", &p.StorageClass},
	} {
		fs.StringVar(f.v, role+"-"+f.name, *f.v, fmt.Sprintf(f.usage, role))
	}
}

func run(dir string, k deploy.Kafka) error {
	files, err := deploy.StrimziFiles(k)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
