package cluster

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/deploy"
)

// ManifestOptions are the flags of `argosy cluster register
// --print-manifests`: where the cluster's spoke is installed and how it
// reaches Kafka.
type ManifestOptions struct {
	// Print is --print-manifests.
	Print bool
	// KafkaName and KafkaNamespace name the Strimzi Kafka.
	KafkaName, KafkaNamespace string
	// Bootstrap is the Kafka listener the workload cluster reaches; empty:
	// the external listener's, read from the Kafka's status.
	Bootstrap string
	// TopicPrefix is --topic-prefix.
	TopicPrefix string
	// Namespace is the spoke's namespace in the workload cluster.
	Namespace string
	// Chart is the chart's path or reference.
	Chart string
	// HubKeyFile is the hub's public key file (hub.pub).
	HubKeyFile string
	// HubURL is --hub-url: the hub's API as the workload cluster reaches
	// it, for the join; empty: the URL this CLI calls.
	HubURL string
}

// joinURL returns the hub URL a joining spoke is given: --hub-url, or the
// URL this CLI reached the hub at unless that is on this machine (a
// port-forward), which no workload cluster reaches.
func (o ManifestOptions) joinURL(cli string) (string, error) {
	if o.HubURL != "" {
		return o.HubURL, nil
	}
	u, err := url.Parse(cli)
	if err != nil {
		return "", fmt.Errorf("the hub's URL %q: %w", cli, err)
	}
	if h := u.Hostname(); h == "localhost" || net.ParseIP(h).IsLoopback() {
		return "", &cmdkit.FlagError{Err: fmt.Errorf("this CLI reaches the hub at %s, on this machine (a port-forward?), which the workload cluster's spoke cannot reach: "+
			"give --hub-url, the hub's address as the workload cluster reaches it", cli)}
	}
	return cli, nil
}

// spokeInstall is what the manifests of one cluster's spoke need.
type spokeInstall struct {
	cluster, hubURL, joinToken, keysDir string
}

// writeManifests writes the steps that install a cluster's spoke: the
// KafkaUser to apply where Strimzi runs, the commands that copy its
// certificate and the cluster CA to the workload cluster, and the helm
// command, as comments, then the KafkaUser itself. Applied as a file, it
// makes the KafkaUser; read, it says the rest.
func writeManifests(w io.Writer, o ManifestOptions, in spokeInstall) error {
	k := deploy.DefaultKafka()
	k.Name, k.Namespace, k.TopicPrefix = o.KafkaName, o.KafkaNamespace, o.TopicPrefix
	user, err := k.Spoke(in.cluster)
	if err != nil {
		return err
	}
	secret, ca := k.Names().SpokeUser(in.cluster), o.KafkaName+"-cluster-ca-cert"
	bootstrap := o.Bootstrap
	if bootstrap == "" {
		bootstrap = fmt.Sprintf(`$(kubectl --context HUB -n %s get kafka %s -o jsonpath='{.status.listeners[?(@.name=="external")].bootstrapServers}')`,
			o.KafkaNamespace, o.KafkaName)
	}
	set := []string{"hub.enabled=false", "projector.enabled=false", "spoke.enabled=true", "spoke.cluster=" + in.cluster}
	keys := ""
	if in.joinToken != "" {
		set = append(set, "spoke.join.hubURL="+in.hubURL, "spoke.join.token="+in.joinToken)
	} else {
		set = append(set, "spoke.keys.mode=secret", "spoke.keys.secret=argosy-spoke-keys")
		keys = fmt.Sprintf("#      kubectl --context %s -n %s create secret generic argosy-spoke-keys --from-file=%s\n", in.cluster, o.Namespace, in.keysDir)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `Installing the spoke of cluster %[1]s (docs/deploy.md#register-a-cluster-and-install-its-spoke).
HUB is the kube context of the cluster where Strimzi runs the Kafka
%[2]s/%[3]s; %[1]s is the workload cluster's.

1. Create the spoke's KafkaUser (this file), least privilege: its own
   group, read on the config, desired-state and trust topics, write on
   status, deployments and dead letters.
     kubectl --context HUB apply -f THIS_FILE
2. Strimzi issues its client certificate into the Secret %[4]s.
   Copy it, and the cluster CA the brokers present, to the workload
   cluster (again whenever Strimzi renews them; see the docs):
     kubectl --context %[1]s create namespace %[5]s
     kubectl --context HUB -n %[2]s get secret %[4]s -o jsonpath='{.data.user\.crt}' | base64 -d > user.crt
     kubectl --context HUB -n %[2]s get secret %[4]s -o jsonpath='{.data.user\.key}' | base64 -d > user.key
     kubectl --context HUB -n %[2]s get secret %[6]s -o jsonpath='{.data.ca\.crt}' | base64 -d > ca.crt
     kubectl --context %[1]s -n %[5]s create secret generic %[4]s --from-file=user.crt --from-file=user.key
     kubectl --context %[1]s -n %[5]s create secret generic %[6]s --from-file=ca.crt
     rm user.key
3. Install the spoke:
`, in.cluster, o.KafkaNamespace, o.KafkaName, secret, o.Namespace, ca)
	b.WriteString(strings.TrimPrefix(strings.ReplaceAll("\n"+keys, "\n#", "\n"), "\n"))
	fmt.Fprintf(&b, "     helm install argosy-spoke %s --kube-context %s --namespace %s \\\n", o.Chart, in.cluster, o.Namespace)
	fmt.Fprintf(&b, "       --set %s \\\n", strings.Join(set, ","))
	fmt.Fprintf(&b, "       --set kafka.bootstrap=\"%s\" \\\n", bootstrap)
	if o.TopicPrefix != "" {
		fmt.Fprintf(&b, "       --set kafka.topicPrefix=%s \\\n", o.TopicPrefix)
	}
	fmt.Fprintf(&b, "       --set kafka.clusterCASecret=%s,spoke.kafkaUserSecret=%s \\\n", ca, secret)
	fmt.Fprintf(&b, "       --set-file hubPublicKey=%s\n", o.HubKeyFile)
	out, err := deploy.YAML(b.String(), user)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
