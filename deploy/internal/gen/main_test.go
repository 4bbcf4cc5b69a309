package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/deploy"
)

// docs reads the YAML documents of a generated file.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range strings.Split(string(b), "\n---\n")[1:] {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// at returns the value at path in o ("" for a missing one).
func at(o map[string]any, path ...string) any {
	var v any = o
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	if v == nil {
		return ""
	}
	return v
}

// TestFlagsReachTheResources generates with every option away from its
// default and finds each in its place: the Kafka's version, metadata
// version, rack and metrics, each node pool's resources, heap, storage and
// spread, and the prefix in every name. Without metrics or a rack key the
// resources have neither.
func TestFlagsReachTheResources(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	k := deploy.DefaultKafka()
	cp, sp := bindFlags(fs, &k)
	if err := fs.Parse([]string{"-topic-prefix", "v2.", "-kafka-version", "4.2.1", "-metadata-version", "4.2-IV1",
		"-rack-topology-key", "kubernetes.io/hostname", "-broker-cpu", "3", "-broker-cpu-limit", "", "-broker-memory", "16Gi",
		"-broker-memory-limit", "16Gi", "-broker-heap", "6g", "-broker-storage", "500Gi", "-broker-storage-class", "fast-ssd",
		"-controller-cpu", "250m", "-controller-memory", "1Gi", "-controller-heap", "512m", "-controller-storage", "10Gi",
	}); err != nil {
		t.Fatal(err)
	}
	k.ConfigPartitions, k.StatusPartitions = int32(*cp), int32(*sp)
	if err := run(dir, k); err != nil {
		t.Fatal(err)
	}
	byKind := map[string]map[string]any{}
	for _, o := range docs(t, filepath.Join(dir, "kafka.yaml")) {
		byKind[at(o, "kind").(string)+"/"+at(o, "metadata", "name").(string)] = o
	}
	kafka, broker, controller, cm := byKind["Kafka/argosy"], byKind["KafkaNodePool/broker"], byKind["KafkaNodePool/controller"], byKind["ConfigMap/argosy-kafka-metrics"]
	if kafka == nil || broker == nil || controller == nil || cm == nil {
		t.Fatalf("kafka.yaml holds %v", byKind)
	}
	for _, c := range []struct {
		o    map[string]any
		path string
		want any
	}{
		{kafka, "spec.kafka.version", "4.2.1"},
		{kafka, "spec.kafka.metadataVersion", "4.2-IV1"},
		{kafka, "spec.kafka.rack.topologyKey", "kubernetes.io/hostname"},
		{kafka, "spec.kafka.config.replica\x00selector\x00class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		{kafka, "spec.kafka.metricsConfig.valueFrom.configMapKeyRef.name", "argosy-kafka-metrics"},
		{kafka, "spec.kafkaExporter.topicRegex", `^v2\.argosy\.[a-z]+$`},
		{kafka, "spec.kafkaExporter.groupRegex", `^(v2\.argosy-projector|v2\.argosy-spoke\..+|v2\.argosy-reader\..+)$`},
		{broker, "spec.resources", map[string]any{"requests": map[string]any{"cpu": "3", "memory": "16Gi"}, "limits": map[string]any{"memory": "16Gi"}}},
		{broker, "spec.jvmOptions", map[string]any{"-Xms": "6g", "-Xmx": "6g"}},
		{broker, "spec.storage.volumes", []any{map[string]any{"id": 0.0, "type": "persistent-claim", "size": "500Gi", "class": "fast-ssd",
			"deleteClaim": false, "kraftMetadata": "shared"}}},
		{broker, "spec.template.pod.topologySpreadConstraints", []any{map[string]any{"maxSkew": 1.0, "topologyKey": "kubernetes.io/hostname",
			"whenUnsatisfiable": "DoNotSchedule", "labelSelector": map[string]any{"matchLabels": map[string]any{"strimzi.io/cluster": "argosy", "strimzi.io/pool-name": "broker"}}}}},
		{controller, "spec.resources", map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "1Gi"}, "limits": map[string]any{"cpu": "1", "memory": "2Gi"}}},
		{controller, "spec.jvmOptions", map[string]any{"-Xms": "512m", "-Xmx": "512m"}},
		{controller, "spec.storage.volumes", []any{map[string]any{"id": 0.0, "type": "persistent-claim", "size": "10Gi",
			"deleteClaim": false, "kraftMetadata": "shared"}}},
	} {
		path := strings.Split(c.path, ".")
		for i := range path {
			path[i] = strings.ReplaceAll(path[i], "\x00", ".")
		}
		if d := cmp.Diff(c.want, at(c.o, path...)); d != "" {
			t.Errorf("%s %s (-want +got):\n%s", at(c.o, "kind"), c.path, d)
		}
	}
	// The prefix names the users, their groups and transactional ids.
	users := map[string]bool{}
	for _, o := range docs(t, filepath.Join(dir, "users.yaml")) {
		users[at(o, "metadata", "name").(string)] = true
	}
	if want := map[string]bool{"v2-argosy-hub": true, "v2-argosy-projector": true, "v2-argosy-reader": true}; !cmp.Equal(users, want) {
		t.Errorf("users %v, want %v", users, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "users.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: v2.argosy-hub-config-\n", "name: v2.argosy-projector\n", "name: v2.argosy-reader.\n", "name: v2.argosy.config\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("users.yaml lacks %q", want)
		}
	}

	// Without metrics or rack awareness.
	k = deploy.DefaultKafka()
	k.Metrics, k.RackTopologyKey = false, ""
	if err := run(dir, k); err != nil {
		t.Fatal(err)
	}
	for _, o := range docs(t, filepath.Join(dir, "kafka.yaml")) {
		for _, p := range [][]string{{"spec", "kafka", "metricsConfig"}, {"spec", "kafkaExporter"}, {"spec", "kafka", "rack"}, {"spec", "template"},
			{"spec", "kafka", "config", "replica.selector.class"}} {
			if v := at(o, p...); v != "" || at(o, "kind") == "ConfigMap" {
				t.Errorf("%s: %s is %v", at(o, "kind"), strings.Join(p, "."), v)
			}
		}
	}
}

// TestBadOptions are refused before anything is written.
func TestBadOptions(t *testing.T) {
	for name, f := range map[string]func(*deploy.Kafka){
		"min ISR above replicas": func(k *deploy.Kafka) { k.MinISR = 4 },
		"no version":             func(k *deploy.Kafka) { k.Version = "" },
		"bad heap":               func(k *deploy.Kafka) { k.Broker.Heap = "4GiB" },
		"no storage":             func(k *deploy.Kafka) { k.Controller.Storage = "" },
		"bad prefix":             func(k *deploy.Kafka) { k.TopicPrefix = ".x" },
	} {
		k := deploy.DefaultKafka()
		f(&k)
		dir := filepath.Join(t.TempDir(), "out")
		if err := run(dir, k); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: wrote %s", name, dir)
		}
	}
}
