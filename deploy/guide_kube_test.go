//go:build integration

package deploy_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// guide is docs/deploy.md followed on a Kubernetes cluster of its own: a
// real kube-apiserver (with etcd and the namespace and garbage-collection
// controllers), a real Kafka broker, and the binaries built from this
// checkout. What this machine lacks (a kubelet to run pods, Strimzi's
// operator, a container engine) is stood in for, step by step, in
// guideSteps, each with the reason.
type guide struct {
	t     *testing.T
	e     *kubetest.Env
	dir   string // the reader's working directory
	bin   string // the built binaries, first on PATH
	env   []string
	kafka *kafkatest.Broker
	// hub is the address the hub's stand-in listens on (for the
	// port-forward's 127.0.0.1:8080).
	hub string
}

// guideStep is how the test takes the guide's commands that match: run
// as written unless skip says why not; before and after do what the
// missing parts of this machine would have done around it.
type guideStep struct {
	match   *regexp.Regexp
	skip    string
	rewrite func(g *guide, cmd string) string
	before  func(g *guide)
	after   func(g *guide)
	// check looks at the command itself, run or not.
	check func(t *testing.T, cmd string)
}

// guideSteps are the commands of docs/deploy.md that need more than a
// shell. Each must match a command of the guide: one that no longer does
// fails the test, so that the list follows the guide.
var guideSteps = []guideStep{
	{match: regexp.MustCompile(`^sed .* strimzi-cluster-operator-1\.2\.0\.yaml \|`),
		// Strimzi's release file is not on this machine: the stand-in holds
		// Strimzi 1.2's CRDs and a RoleBinding naming myproject, as the
		// release's do, so that the command runs as written.
		before: (*guide).strimziRelease,
		after:  (*guide).checkStrimziNamespace},
	{match: regexp.MustCompile(`^kubectl -n kafka rollout status deployment/strimzi-cluster-operator `),
		skip: "no kubelet runs the operator's pod (and Strimzi's release file, with its Deployment, is not on this machine)",
		// By the time the operator runs, the apiserver serves its CRDs.
		before: (*guide).crdsEstablished},
	{match: regexp.MustCompile(`^kubectl -n kafka wait kafka/argosy --for=condition=Ready`),
		// No operator runs: the stand-in starts a real broker with a TLS
		// listener that wants client certificates, and reports the Kafka
		// Ready with its listeners, as Strimzi would.
		before: (*guide).kafkaReady},
	{match: regexp.MustCompile(`^kubectl -n kafka apply -f deploy/strimzi/topics\.yaml -f deploy/strimzi/users\.yaml$`),
		// Strimzi's topic and user operators: the topics on the broker, and
		// a Secret per KafkaUser with a certificate the broker's CA signed.
		after: (*guide).topicsAndUsers},
	{match: regexp.MustCompile(`^go run \./deploy/internal/gen `),
		rewrite: func(g *guide, cmd string) string {
			return strings.Replace(cmd, "go run ./deploy/internal/gen", filepath.Join(g.bin, "gen"), 1)
		},
		after: func(g *guide) { g.exists("my-strimzi/kafka.yaml", "my-strimzi/topics.yaml", "my-strimzi/users.yaml") }},
	{match: regexp.MustCompile(`^docker build `),
		skip:  "no container engine runs here; TestImageBinaries builds the binaries with the Dockerfile's own go build line",
		check: versionedImage},
	{match: regexp.MustCompile(`^helm install argosy \./deploy/helm/argosy -n kafka `),
		// No kubelet: the hub's pod is run as a process, from the
		// Deployment the chart installed (its command, environment and
		// mounted Secrets), pointed at this machine's broker and store.
		after: func(g *guide) {
			g.hub = g.runPod("kafka", "argosy-hub", nil)
			g.runPod("kafka", "argosy-projector", nil)
		}},
	{match: regexp.MustCompile(`^kubectl -n kafka port-forward svc/argosy-hub 8080:8080 &$`),
		skip: "no pod runs to forward to: the hub's stand-in process listens on 127.0.0.1 itself, and the guide's 127.0.0.1:8080 is its address"},
	{match: regexp.MustCompile(`^argosy login http://127\.0\.0\.1:8080 `),
		rewrite: func(g *guide, cmd string) string { return strings.Replace(cmd, "127.0.0.1:8080", g.hub, 1) }},
	{match: regexp.MustCompile(`^argosy cluster register prod-eu-1 .*> prod-eu-1\.yaml$`),
		after: func(g *guide) { g.printedSteps("prod-eu-1", "prod-eu-1.yaml") }},
	{match: regexp.MustCompile(`^argosy cluster register prod-eu-2 .*> prod-eu-2\.yaml$`),
		after: func(g *guide) {
			g.printedSteps("prod-eu-2", "prod-eu-2.yaml")
			// The spoke's pod, as its ServiceAccount: its RBAC and the
			// admission policy hold it as they would in the cluster.
			g.runPod("argosy-spoke", "argosy-spoke", map[string]string{"KUBECONFIG": g.serviceAccountKubeconfig("argosy-spoke", "argosy-spoke")})
		}},
}

// TestDeployGuide runs every command of docs/deploy.md's shell blocks, in
// order, as a reader would: against a kube-apiserver and a Kafka broker of
// its own, with the binaries of this checkout on PATH. A command that
// fails fails the test.
func TestDeployGuide(t *testing.T) {
	cmds := guideCommands(t, "../docs/deploy.md")
	g := newGuide(t)
	used := make([]bool, len(guideSteps))
	for _, cmd := range cmds {
		var step guideStep
		for i, s := range guideSteps {
			if s.match.MatchString(cmd) {
				step, used[i] = s, true
				break
			}
		}
		if step.check != nil {
			step.check(t, cmd)
		}
		if step.before != nil {
			step.before(g)
		}
		if step.skip != "" {
			t.Logf("not run: %s\n    (%s)", cmd, step.skip)
			continue
		}
		if step.rewrite != nil {
			cmd = step.rewrite(g, cmd)
		}
		g.sh(cmd)
		if step.after != nil {
			step.after(g)
		}
	}
	// The hub and the projector the chart installed work together: the
	// registrations went through the hub to Kafka, and the projector folded
	// them into the store whose views the hub serves.
	var out []byte
	defer func() {
		if t.Failed() {
			t.Logf("argosy fleet:\n%s", out)
		}
	}()
	waitFor(t, "the registered clusters in the hub's views", func() bool {
		c := exec.CommandContext(t.Context(), filepath.Join(g.bin, "argosy"), "fleet")
		c.Dir, c.Env = g.dir, g.env
		var err error
		out, err = c.CombinedOutput()
		// prod-eu-2's spoke runs, and its heartbeats make it Connected.
		return err == nil && strings.Contains(string(out), "prod-eu-1") && regexp.MustCompile(`(?m)^prod-eu-2\s.*Connected`).Match(out)
	})
	for i, s := range guideSteps {
		if !used[i] {
			t.Errorf("no command of the guide matches %s: the test no longer follows the guide", s.match)
		}
	}
}

// versionedImage: an image is built with the version it is tagged with,
// which the binaries report (the Dockerfile's VERSION is dev otherwise).
func versionedImage(t *testing.T, cmd string) {
	m := regexp.MustCompile(`--build-arg VERSION=(\S+) .*-t \S+:(\S+) `).FindStringSubmatch(cmd)
	if m == nil || m[1] != m[2] {
		t.Errorf("%s: want --build-arg VERSION=V and a tag :V", cmd)
	}
}

// guideCommands returns the commands of a Markdown file's sh blocks, with
// continued lines joined and comments left out.
func guideCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	var cur strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in = true
			continue
		case in && strings.TrimSpace(line) == "```":
			in = false
			continue
		case !in:
			continue
		}
		line = strings.TrimSpace(line)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if c, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(strings.TrimSpace(c) + " ")
			continue
		}
		// A comment at the end of a line is the shell's, and stays.
		cur.WriteString(line)
		cmds = append(cmds, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil || len(cmds) == 0 {
		t.Fatalf("%s: %d commands: %v", path, len(cmds), err)
	}
	return cmds
}

// newGuide starts the cluster and builds the binaries.
func newGuide(t *testing.T) *guide {
	t.Helper()
	ctx := t.Context()
	e, err := kubetest.Start(ctx, kubetest.Current(t).Bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	g := &guide{t: t, e: e, dir: t.TempDir(), bin: t.TempDir()}
	build := exec.CommandContext(ctx, "go", "build", "-o", g.bin+"/", "./cmd/argosy", "./cmd/argosy-hub", "./cmd/argosy-spoke", "./deploy/internal/gen")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tool := range []string{e.Bin.Kubectl, e.Bin.Helm} {
		if err := os.Symlink(tool, filepath.Join(g.bin, filepath.Base(tool))); err != nil {
			t.Fatal(err)
		}
	}
	// The guide runs in a checkout: its deploy/ and docs/ are the repository's.
	for _, d := range []string{"deploy", "docs"} {
		abs, err := filepath.Abs(filepath.Join("..", d))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(g.dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	g.env = append(os.Environ(), "PATH="+g.bin+":"+os.Getenv("PATH"), "KUBECONFIG="+g.kubeconfig(),
		"HOME="+g.dir, "ARGOSY_CONFIG="+filepath.Join(g.dir, ".config", "argosy", "config.yaml"))
	return g
}

// kubeconfig writes the reader's kubeconfig: the cluster as the current
// context, and as HUB, prod-eu-1 and prod-eu-2, the contexts the printed
// steps name (one cluster plays them all).
func (g *guide) kubeconfig() string {
	cfg, err := clientcmd.LoadFromFile(g.e.Kubeconfig)
	if err != nil {
		g.t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	for _, name := range []string{"HUB", "prod-eu-1", "prod-eu-2"} {
		c := *cur
		c.Namespace = ""
		cfg.Contexts[name] = &c
	}
	path := filepath.Join(g.dir, ".kube", "config")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		g.t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		g.t.Fatal(err)
	}
	return path
}

// sh runs one command of the guide in its working directory.
func (g *guide) sh(cmd string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(g.t.Context(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", cmd)
	c.Dir, c.Env = g.dir, g.env
	out, err := c.CombinedOutput()
	if err != nil {
		g.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	g.t.Logf("ran: %s", cmd)
}

// exists fails the test unless each path is a file in the guide's directory.
func (g *guide) exists(paths ...string) {
	g.t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(g.dir, p)); err != nil {
			g.t.Error(err)
		}
	}
}

func (g *guide) dynamic() dynamic.Interface {
	d, err := dynamic.NewForConfig(g.e.Admin)
	if err != nil {
		g.t.Fatal(err)
	}
	return d
}

var (
	kafkaGVR = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkas"}
	rbGVR    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// strimziRelease writes the stand-in for Strimzi's release file.
func (g *guide) strimziRelease() {
	dir := os.Getenv("ARGOSY_STRIMZI_CRDS")
	if dir == "" {
		g.t.Fatal("ARGOSY_STRIMZI_CRDS is not set: run the test through make, which points it at Strimzi's CRDs")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		g.t.Fatalf("Strimzi CRDs in %s: %v", dir, err)
	}
	var b strings.Builder
	for _, f := range files {
		crd, err := os.ReadFile(f)
		if err != nil {
			g.t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(crd)
		b.WriteString("\n")
	}
	b.WriteString(`---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: strimzi-cluster-operator
  namespace: myproject
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: strimzi-cluster-operator
  namespace: myproject
subjects:
  - kind: ServiceAccount
    name: strimzi-cluster-operator
    namespace: myproject
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: strimzi-cluster-operator-namespaced
`)
	if err := os.WriteFile(filepath.Join(g.dir, "strimzi-cluster-operator-1.2.0.yaml"), []byte(b.String()), 0o600); err != nil {
		g.t.Fatal(err)
	}
}

// crdsEstablished waits until the apiserver serves Strimzi's CRDs.
func (g *guide) crdsEstablished() {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	waitFor(g.t, "Strimzi's CRDs established", func() bool {
		list, err := g.dynamic().Resource(crds).List(g.t.Context(), metav1.ListOptions{LabelSelector: "app=strimzi"})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		for _, crd := range list.Items {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				c, _ := c.(map[string]any)
				established = established || (c["type"] == "Established" && c["status"] == "True")
			}
			if !established {
				return false
			}
		}
		return true
	})
}

// checkStrimziNamespace: the operator's RoleBinding landed in kafka and
// binds kafka's ServiceAccount.
func (g *guide) checkStrimziNamespace() {
	rb, err := g.dynamic().Resource(rbGVR).Namespace("kafka").Get(g.t.Context(), "strimzi-cluster-operator", metav1.GetOptions{})
	if err != nil {
		g.t.Fatalf("the operator's RoleBinding: %v", err)
	}
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != "kafka" {
		g.t.Errorf("the operator's RoleBinding binds %v, want the ServiceAccount of namespace kafka", subjects)
	}
}

// kafkaReady starts the broker and reports the Kafka Ready, as Strimzi's
// cluster operator does once its brokers run.
func (g *guide) kafkaReady() {
	g.kafka = kafkatest.StartBroker(g.t, kafkatest.WithListeners(kafkatest.SSL))
	addr := g.kafka.ListenerAddr(kafkatest.SSL)
	k := g.dynamic().Resource(kafkaGVR).Namespace("kafka")
	obj, err := k.Get(g.t.Context(), "argosy", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	status := map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
		"listeners": []any{
			map[string]any{"name": "tls", "bootstrapServers": addr},
			map[string]any{"name": "external", "bootstrapServers": addr},
		},
		"observedGeneration": obj.GetGeneration(),
	}
	if err := unstructured.SetNestedField(obj.Object, status, "status"); err != nil {
		g.t.Fatal(err)
	}
	if _, err := k.UpdateStatus(g.t.Context(), obj, metav1.UpdateOptions{}); err != nil {
		g.t.Fatalf("the Kafka's status: %v", err)
	}
}

// topicsAndUsers does what Strimzi's topic and user operators do with the
// KafkaTopics and KafkaUsers just applied.
func (g *guide) topicsAndUsers() {
	ctx := g.t.Context()
	d := g.dynamic()
	topics, err := d.Resource(schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkatopics"}).Namespace("kafka").List(ctx, metav1.ListOptions{})
	if err != nil || len(topics.Items) == 0 {
		g.t.Fatalf("KafkaTopics: %d, %v", len(topics.Items), err)
	}
	adm := g.kafka.Client(g.t)
	for _, kt := range topics.Items {
		name, _, _ := unstructured.NestedString(kt.Object, "spec", "topicName")
		partitions, _, _ := unstructured.NestedInt64(kt.Object, "spec", "partitions")
		cfg, _, _ := unstructured.NestedMap(kt.Object, "spec", "config")
		g.createTopic(adm, name, int32(partitions), cfg)
	}
	// The topic operator reports a KafkaTopic Ready once the broker leads
	// every partition of it.
	waitFor(g.t, "every topic led", func() bool {
		details, err := kadm.NewClient(adm).ListTopics(ctx)
		if err != nil || len(details) != len(topics.Items) {
			return false
		}
		for _, d := range details {
			if d.Err != nil {
				return false
			}
			for _, p := range d.Partitions {
				if p.Err != nil || p.Leader < 0 {
					return false
				}
			}
		}
		return true
	})
	users, err := d.Resource(schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkausers"}).Namespace("kafka").List(ctx, metav1.ListOptions{})
	if err != nil || len(users.Items) == 0 {
		g.t.Fatalf("KafkaUsers: %d, %v", len(users.Items), err)
	}
	for _, u := range users.Items {
		g.userSecret(u.GetName())
	}
	g.secret("kafka", "argosy-cluster-ca-cert", map[string]string{"ca.crt": g.kafka.PKI.CAFile})
}

// userSecret makes the Secret Strimzi's user operator issues a KafkaUser:
// here the broker's client certificate, which its CA signed.
func (g *guide) userSecret(name string) {
	g.secret("kafka", name, map[string]string{"user.crt": g.kafka.PKI.ClientCertFile, "user.key": g.kafka.PKI.ClientKeyFile})
}

// printedSteps runs the steps that argosy cluster register printed into
// file, in order, as the reader would paste them: the contexts HUB and
// cluster are this test's one cluster, so the spoke installed before is
// uninstalled first, as another workload cluster would not have it.
func (g *guide) printedSteps(cluster, file string) {
	g.t.Helper()
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		g.t.Fatal(err)
	}
	cmds := printedCommands(string(b))
	if len(cmds) < 3 {
		g.t.Fatalf("%s holds %d commands:\n%s", file, len(cmds), b)
	}
	g.uninstallSpoke()
	for _, cmd := range cmds {
		cmd = strings.ReplaceAll(cmd, "THIS_FILE", file)
		g.sh(cmd)
		if strings.Contains(cmd, "apply -f "+file) {
			// Strimzi's user operator issues the new KafkaUser's Secret.
			g.userSecret("argosy-spoke-" + cluster)
		}
	}
}

// printedCommands returns the shell commands in the comments that argosy
// cluster register --print-manifests writes above the KafkaUser.
func printedCommands(printed string) []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(printed, "\n") {
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			break // the KafkaUser
		}
		text = strings.TrimSpace(text)
		if cur.Len() == 0 && !regexp.MustCompile(`^(kubectl|helm|rm) `).MatchString(text) {
			continue
		}
		if c, ok := strings.CutSuffix(text, `\`); ok {
			cur.WriteString(strings.TrimSpace(c) + " ")
			continue
		}
		cur.WriteString(text)
		cmds = append(cmds, cur.String())
		cur.Reset()
	}
	return cmds
}

// uninstallSpoke removes the spoke an earlier printed step installed, and
// its namespace, and makes Argo CD's namespace, as a workload cluster of
// its own would have them.
func (g *guide) uninstallSpoke() {
	ctx := g.t.Context()
	cs := kubetest.Clientset(g.t, g.e.Admin)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			g.t.Fatal(err)
		}
	} else if err := g.e.InstallArgoCDCRDs(ctx); err != nil {
		g.t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "argosy-spoke", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return
	}
	g.sh("helm uninstall argosy-spoke --namespace argosy-spoke --wait")
	// The chart keeps the key volume's claim; the controller that lifts a
	// claim's protection once no pod uses it does not run here.
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("argosy-spoke").List(ctx, metav1.ListOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	for _, pvc := range pvcs.Items {
		_, err := cs.CoreV1().PersistentVolumeClaims("argosy-spoke").Patch(ctx, pvc.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil {
			g.t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "argosy-spoke", metav1.DeleteOptions{}); err != nil {
		g.t.Fatal(err)
	}
	waitFor(g.t, "namespace argosy-spoke deleted", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "argosy-spoke", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount ns/name with a token of its own, as its pod's would.
func (g *guide) serviceAccountKubeconfig(ns, name string) string {
	cfg := g.e.TokenConfig(g.t, ns, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: true}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = "pod"
	path := filepath.Join(g.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		g.t.Fatal(err)
	}
	return path
}

// secret makes a Secret of files' contents, keyed as given.
func (g *guide) secret(ns, name string, files map[string]string) {
	data := map[string][]byte{}
	for k, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			g.t.Fatal(err)
		}
		data[k] = b
	}
	cs := kubetest.Clientset(g.t, g.e.Admin)
	_, err := cs.CoreV1().Secrets(ns).Create(g.t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
}

// createTopic makes a topic as Strimzi's topic operator would from a
// KafkaTopic.
func (g *guide) createTopic(cl *kgo.Client, name string, partitions int32, cfg map[string]any) {
	configs := map[string]*string{}
	for k, v := range cfg {
		s := fmt.Sprint(v)
		configs[k] = &s
	}
	// One broker here, not the Kafka's three: one replica must do.
	one := "1"
	configs["min.insync.replicas"] = &one
	res, err := kadm.NewClient(cl).CreateTopic(g.t.Context(), partitions, 1, configs, name)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		g.t.Fatalf("topic %s: %v", name, err)
	}
}

// runPod runs the first container of a Deployment's pod as a process on
// this machine, as a kubelet would run it: its command, its environment
// (values, Secret and ConfigMap keys, the namespace) and its mounted
// Secrets and ConfigMaps, as files under a directory of its own. Four
// things differ, and only these: Kafka is this machine's broker (the
// chart's bootstrap is a cluster DNS name), the API and metrics listen on
// free ports of 127.0.0.1, and the store, which is the operator's
// PostgreSQL, is an SQLite file.
func (g *guide) runPod(ns, name string, extra map[string]string) (listen string) {
	g.t.Helper()
	ctx := g.t.Context()
	cs := kubetest.Clientset(g.t, g.e.Admin)
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	root := g.t.TempDir()
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		local := filepath.Join(root, m.MountPath)
		for _, v := range pod.Volumes {
			if v.Name == m.Name {
				g.volume(ns, v, local)
			}
		}
		mounts[m.MountPath] = local
	}
	local := func(s string) string {
		for mp, l := range mounts {
			if s == mp {
				return l
			}
			if rest, ok := strings.CutPrefix(s, mp+"/"); ok {
				return filepath.Join(l, rest)
			}
		}
		return s
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		g.t.Fatal(err)
	}
	listen = fmt.Sprintf("127.0.0.1:%d", ports[0])
	metrics := fmt.Sprintf("127.0.0.1:%d", ports[1])
	override := map[string]string{
		"ARGOSY_KAFKA_BROKERS": g.kafka.ListenerAddr(kafkatest.SSL), "ARGOSY_LISTEN": listen, "ARGOSY_METRICS_ADDRESS": metrics,
		// One store for the release, as its PostgreSQL is.
		"ARGOSY_STORE": "sqlite://" + filepath.Join(g.dir, ".views.db"),
	}
	var env []string
	for _, ev := range c.Env {
		v := ev.Value
		if from := ev.ValueFrom; from != nil {
			switch {
			case from.SecretKeyRef != nil:
				sec, err := cs.CoreV1().Secrets(ns).Get(ctx, from.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					g.t.Fatalf("%s: env %s: %v", name, ev.Name, err)
				}
				v = string(sec.Data[from.SecretKeyRef.Key])
			case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.namespace":
				v = ns
			default:
				g.t.Fatalf("%s: env %s: the stand-in cannot resolve %+v", name, ev.Name, from)
			}
		}
		if o, ok := override[ev.Name]; ok {
			v = o
		}
		env = append(env, ev.Name+"="+local(v))
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		if flag, v, ok := strings.Cut(a, "="); ok {
			args[i] = flag + "=" + local(v)
		}
	}
	p, err := testproc.Start(root, name, filepath.Join(g.bin, args[0]), args[1:], env)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() {
		if err := p.Stop(20 * time.Second); err != nil || g.t.Failed() {
			g.t.Logf("%s: %v\n%s", name, err, p.LogTail())
		}
	})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := p.WaitStatus(ctx, "http://"+metrics+"/readyz", 200, 2*time.Minute); err != nil {
		g.t.Fatalf("%s: %v\n%s", name, err, p.LogTail())
	}
	return listen
}

// volume writes a Secret or ConfigMap volume's files into dir; any other
// volume is an empty directory.
func (g *guide) volume(ns string, v corev1.Volume, dir string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		g.t.Fatal(err)
	}
	ctx := g.t.Context()
	cs := kubetest.Clientset(g.t, g.e.Admin)
	data := map[string][]byte{}
	var items []corev1.KeyToPath
	switch {
	case v.Secret != nil:
		sec, err := cs.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			g.t.Fatalf("volume %s: %v", v.Name, err)
		}
		data, items = sec.Data, v.Secret.Items
	case v.ConfigMap != nil:
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			g.t.Fatalf("volume %s: %v", v.Name, err)
		}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		items = v.ConfigMap.Items
	default:
		return
	}
	if items == nil {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			g.t.Fatalf("volume %s: no key %s", v.Name, it.Key)
		}
		if err := os.WriteFile(filepath.Join(dir, it.Path), b, 0o600); err != nil {
			g.t.Fatal(err)
		}
	}
}
