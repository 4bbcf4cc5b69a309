//go:build integration

package cluster

import (
	"regexp"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestPrintManifests registers clusters with --print-manifests against a
// hub and renders the chart (the real helm) with exactly the --set
// arguments the printed helm command holds: with a join token, and with
// keys. The KafkaUser printed is the cluster's own, named after the topic
// prefix when there is one, and the chart mounts its Secret.
func TestPrintManifests(t *testing.T) {
	h := cmdtest.StartHub(t)
	dir, _ := keysDir(t, "edge-7")
	for _, c := range []struct {
		cluster string
		user    string // the KafkaUser's and its Secret's name
		args    []string
		want    []string // in the rendered chart
	}{
		{"prod-eu", "argosy-spoke-prod-eu", []string{"--labels", "env=prod", "--hub-url", "https://argosy.example.com"},
			[]string{"value: \"prod-eu\"", "value: \"https://argosy.example.com\"", "name: argosy-spoke-join", "token: \"argosy_join_", "claimName: argosy-spoke-keys", "value: \"kafka.example.com:9094\""}},
		{"edge-7", "p-argosy-spoke-edge-7", []string{"--keys-dir", dir, "--topic-prefix", "p."},
			[]string{"value: \"edge-7\"", "secretName: argosy-spoke-keys", "value: \"p.\"", "secretName: p-argosy-spoke-edge-7"}},
	} {
		t.Run(c.cluster, func(t *testing.T) {
			args := append([]string{"cluster", "register", c.cluster, "--print-manifests", "--kafka-bootstrap", "kafka.example.com:9094",
				"--chart", "../../../../deploy/helm/argosy", "--server", h.URL, "--token", h.Admin}, c.args...)
			stdout, stderr, err := cmdtest.Run(t, NewCmdCluster, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if !strings.Contains(stdout, "kubectl --context HUB -n kafka get secret "+c.user+" ") {
				t.Errorf("the commands do not copy the KafkaUser's Secret from the Kafka's namespace:\n%s", stdout)
			}
			if !strings.Contains(stderr, "cluster.registered") {
				t.Errorf("stderr %q does not show the registration", stderr)
			}
			objs, err := kubetest.ParseYAML([]byte(stdout))
			if err != nil || len(objs) != 1 || objs[0].GetKind() != "KafkaUser" || objs[0].GetName() != c.user {
				t.Fatalf("printed objects %v, %v:\n%s", objs, err, stdout)
			}
			helm := helmArgs(t, stdout)
			out, err := kubetest.Helm(t.Context(), append([]string{"template"}, helm...)...)
			if err != nil {
				t.Fatalf("the printed helm command fails: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the rendered chart lacks %q", w)
				}
			}
		})
	}
}

// helmArgs returns the printed helm install command's arguments, without
// the kube context and with the hub key file replaced by a value.
func helmArgs(t *testing.T, printed string) []string {
	t.Helper()
	i := strings.Index(printed, "helm install ")
	if i < 0 {
		t.Fatalf("no helm command in\n%s", printed)
	}
	var cmd strings.Builder
	for _, line := range strings.Split(printed[i:], "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		cont := strings.HasSuffix(line, `\`)
		cmd.WriteString(strings.TrimSuffix(line, `\`) + " ")
		if !cont {
			break
		}
	}
	fields := regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(cmd.String(), -1)
	var args []string
	for i := 2; i < len(fields); i++ {
		f := strings.Trim(fields[i], `"`)
		switch {
		case f == "--kube-context":
			i++
		case f == "--set-file" && strings.HasPrefix(fields[i+1], "hubPublicKey="):
			args = append(args, "--set", "hubPublicKey=R0d5bm9TWk9GUEF5c3VQM2VpSjRZZFdYSnlZd0U3L2JHVnB3bUhtOXh3QT0=")
			i++
		default:
			if strings.HasPrefix(f, "kafka.bootstrap=") {
				f = strings.ReplaceAll(f, `"`, "")
			}
			args = append(args, f)
		}
	}
	return args
}
