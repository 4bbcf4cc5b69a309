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
// grant to the ones the components use: with no prefix, their defaults.
func TestNamesMatchComponents(t *testing.T) {
	n := deploy.NamesFor("")
	for _, c := range []struct{ what, got, want string }{
		{"hub transactional prefix", n.HubTransactionalPrefix, hub.DefaultTransactionalPrefix},
		{"projector group", n.ProjectorGroup, projector.DefaultGroup},
		{"spoke group", n.SpokeGroup("prod-eu-1"), spoke.Group("prod-eu-1")},
	} {
		if c.got != c.want {
			t.Errorf("%s: ACLs grant %q, the component uses %q", c.what, c.got, c.want)
		}
	}
}

// TestNamesFollowThePrefix: every name of an install begins with its
// prefix, the KafkaUsers' mapped to a Kubernetes name; no prefix keeps the
// names installs have always had; and two prefixes share no name.
func TestNamesFollowThePrefix(t *testing.T) {
	for _, c := range []struct {
		prefix string
		want   deploy.Names
		spoke  [2]string // user, group of cluster c1
	}{
		{"", deploy.Names{HubUser: "argosy-hub", ProjectorUser: "argosy-projector", ReaderUser: "argosy-reader",
			HubTransactionalPrefix: "argosy-hub-config-", ProjectorGroup: "argosy-projector", ReaderGroupPrefix: "argosy-reader."},
			[2]string{"argosy-spoke-c1", "argosy-spoke.c1"}},
		{"prod.", deploy.Names{Prefix: "prod.", HubUser: "prod-argosy-hub", ProjectorUser: "prod-argosy-projector", ReaderUser: "prod-argosy-reader",
			HubTransactionalPrefix: "prod.argosy-hub-config-", ProjectorGroup: "prod.argosy-projector", ReaderGroupPrefix: "prod.argosy-reader."},
			[2]string{"prod-argosy-spoke-c1", "prod.argosy-spoke.c1"}},
		{"team-2.", deploy.Names{Prefix: "team-2.", HubUser: "team-2-argosy-hub", ProjectorUser: "team-2-argosy-projector", ReaderUser: "team-2-argosy-reader",
			HubTransactionalPrefix: "team-2.argosy-hub-config-", ProjectorGroup: "team-2.argosy-projector", ReaderGroupPrefix: "team-2.argosy-reader."},
			[2]string{"team-2-argosy-spoke-c1", "team-2.argosy-spoke.c1"}},
	} {
		n := deploy.NamesFor(c.prefix)
		if d := cmp.Diff(c.want, n); d != "" {
			t.Errorf("prefix %q (-want +got):\n%s", c.prefix, d)
		}
		if got := [2]string{n.SpokeUser("c1"), n.SpokeGroup("c1")}; got != c.spoke {
			t.Errorf("prefix %q: spoke user and group %v, want %v", c.prefix, got, c.spoke)
		}
		if err := n.Validate(); err != nil {
			t.Error(err)
		}
		// The components take the same names from events.
		if n.HubTransactionalPrefix != events.HubTransactionalPrefix(c.prefix) || n.ProjectorGroup != events.ProjectorGroup(c.prefix) ||
			n.SpokeGroup("c1") != events.SpokeGroup(c.prefix, "c1") {
			t.Errorf("prefix %q: names differ from package events'", c.prefix)
		}
	}
	// A prefix is a DNS label and a dot, so that the KafkaUser names made
	// from it (the dot as '-') are one prefix's only: prod- or Prod. would
	// name prod.'s users.
	for _, bad := range []string{".a", "-", "a b", "a/", "prod", "prod-", "prod_", "Prod.", "V2_", "a..", "-a.", "a-.", "a.b."} {
		if err := deploy.NamesFor(bad).Validate(); err == nil {
			t.Errorf("prefix %q: no error", bad)
		}
	}
	// Two installs' users and ACLs name nothing in common.
	a, b := deploy.DefaultKafka(), deploy.DefaultKafka()
	a.TopicPrefix, b.TopicPrefix = "blue.", "green."
	seen := map[string]string{}
	for _, k := range []deploy.Kafka{a, b} {
		n := k.Names()
		spoke, err := k.Spoke("c1")
		if err != nil {
			t.Fatal(err)
		}
		names := []string{n.HubUser, n.ProjectorUser, n.ReaderUser, n.SpokeUser("c1"), spoke["metadata"].(map[string]any)["name"].(string)}
		for _, acls := range [][]deploy.ACL{k.HubACLs(), k.ProjectorACLs(), k.ReaderACLs(), k.SpokeACLs("c1")} {
			for _, acl := range acls {
				names = append(names, acl.Type+":"+acl.Name)
			}
		}
		for _, name := range names {
			if other, ok := seen[name]; ok && other != k.TopicPrefix {
				t.Errorf("%q is both %q's and %q's", name, other, k.TopicPrefix)
			}
			seen[name] = k.TopicPrefix
			if !strings.Contains(name, strings.TrimSuffix(k.TopicPrefix, ".")) {
				t.Errorf("%q does not carry the prefix %q", name, k.TopicPrefix)
			}
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
