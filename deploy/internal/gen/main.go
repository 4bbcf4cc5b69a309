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
	dir := flag.String("dir", "strimzi", "directory to write the Strimzi manifests into")
	flag.StringVar(&k.Name, "name", k.Name, "the Kafka resource's name")
	flag.StringVar(&k.Namespace, "namespace", k.Namespace, "the Kafka's namespace")
	flag.StringVar(&k.TopicPrefix, "topic-prefix", k.TopicPrefix, "prefix of Argosy's topic names (--topic-prefix of the components)")
	cp := flag.Int("config-partitions", int(k.ConfigPartitions), "partitions of the config and desired-state topics; fixed once spokes run")
	sp := flag.Int("status-partitions", int(k.StatusPartitions), "partitions of the status and deployments topics")
	flag.IntVar(&k.Replicas, "replicas", k.Replicas, "brokers, controllers and every topic's replication factor")
	flag.IntVar(&k.MinISR, "min-insync-replicas", k.MinISR, "min.insync.replicas of the brokers and every topic")
	flag.Parse()
	k.ConfigPartitions, k.StatusPartitions = int32(*cp), int32(*sp)
	if err := run(*dir, k); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, k deploy.Kafka) error {
	if k.ConfigPartitions < 1 || k.StatusPartitions < 1 || k.Replicas < 1 || k.MinISR < 1 || k.MinISR > k.Replicas {
		return fmt.Errorf("want at least one partition and replica, and 1 ≤ min.insync.replicas ≤ replicas")
	}
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
