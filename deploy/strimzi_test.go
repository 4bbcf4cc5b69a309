package deploy_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/deploy"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/spoke"
)

// TestStrimziFilesAreGenerated fails when deploy/strimzi is not what
// package deploy generates: run go generate ./deploy/.
func TestStrimziFilesAreGenerated(t *testing.T) {
	files, err := deploy.StrimziFiles(deploy.DefaultKafka())
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := filepath.Glob("strimzi/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range onDisk {
		names = append(names, filepath.Base(p))
	}
	if want := slices.Sorted(maps.Keys(files)); !slices.Equal(names, want) {
		t.Errorf("deploy/strimzi holds %v, want %v: run go generate ./deploy/", names, want)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("strimzi", name))
		if err != nil {
			t.Errorf("%v: run go generate ./deploy/", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("strimzi/%s is stale: run go generate ./deploy/\n%s", name, cmp.Diff(string(want), string(got)))
		}
	}
}

// kafkaTopic is what this test reads of a KafkaTopic.
type kafkaTopic struct {
	APIVersion string `json:"apiVersion"`
	Kind       string
	Metadata   struct {
		Name, Namespace string
		Labels          map[string]string
	}
	Spec struct {
		TopicName  string `json:"topicName"`
		Partitions int32
		Replicas   int
		Config     map[string]string
	}
}

// readDocs reads the YAML documents of a deploy/strimzi file into T.
func readDocs[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, doc := range strings.Split(string(b), "\n---\n")[1:] {
		var v T
		if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// TestTopicsMatchTopicPlan reads the committed KafkaTopics and holds each
// to the topic the code creates: the same topics, partitions and settings,
// with min.insync.replicas as the Kafka's.
func TestTopicsMatchTopicPlan(t *testing.T) {
	k := deploy.DefaultKafka()
	byName := map[string]kafkaTopic{}
	for _, kt := range readDocs[kafkaTopic](t, "strimzi/topics.yaml") {
		if kt.Kind != "KafkaTopic" || kt.Metadata.Labels["strimzi.io/cluster"] != k.Name {
			t.Errorf("%s: kind %s, labels %v", kt.Metadata.Name, kt.Kind, kt.Metadata.Labels)
		}
		byName[kt.Spec.TopicName] = kt
	}
	names := events.DefaultTopics("")
	plan := events.TopicPlan(k.ConfigPartitions, k.StatusPartitions)
	if len(byName) != len(plan) {
		t.Errorf("%d KafkaTopics for %d topics", len(byName), len(plan))
	}
	for role, spec := range plan {
		kt, ok := byName[names[role]]
		if !ok {
			t.Errorf("no KafkaTopic for %s (%s)", names[role], role)
			continue
		}
		want := maps.Clone(spec.Configs)
		want["min.insync.replicas"] = fmt.Sprint(k.MinISR)
		if kt.Spec.Partitions != spec.Partitions || kt.Spec.Replicas != k.Replicas {
			t.Errorf("%s: %d partitions, %d replicas; want %d, %d", names[role], kt.Spec.Partitions, kt.Spec.Replicas, spec.Partitions, k.Replicas)
		}
		if d := cmp.Diff(want, kt.Spec.Config); d != "" {
			t.Errorf("%s config (-plan +KafkaTopic):\n%s", names[role], d)
		}
	}
}

// TestNamesMatchComponents holds the groups and transactional ids the ACLs
// grant to the ones the components use.
func TestNamesMatchComponents(t *testing.T) {
	for _, c := range []struct{ what, got, want string }{
		{"hub transactional prefix", deploy.HubTransactionalPrefix, hub.DefaultTransactionalPrefix},
		{"projector group", deploy.ProjectorGroup, projector.DefaultGroup},
		{"spoke group", deploy.SpokeGroupPrefix + "prod-eu-1", spoke.Group("prod-eu-1")},
	} {
		if c.got != c.want {
			t.Errorf("%s: ACLs grant %q, the component uses %q", c.what, c.got, c.want)
		}
	}
}

func TestSpokeUser(t *testing.T) {
	k := deploy.DefaultKafka()
	u, err := k.Spoke("prod-eu-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := deploy.YAML("x", u)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: argosy-spoke-prod-eu-1\n", "name: argosy-spoke.prod-eu-1\n", "type: group", "name: argosy.config\n"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("spoke user lacks %q:\n%s", want, b)
		}
	}
	for _, bad := range []string{"", "Prod", "a_b", strings.Repeat("a", 64), "-a"} {
		if _, err := k.Spoke(bad); err == nil {
			t.Errorf("cluster %q: no error", bad)
		}
	}
}
