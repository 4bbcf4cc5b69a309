//go:build integration

package deploy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/deploy"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

const chart = "helm/argosy"

// valuesFiles are the chart's test values (helm's ci/ convention).
func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("values files %v: %v", files, err)
	}
	return files
}

// render runs helm template on the chart as release "argosy" in ns.
func render(t *testing.T, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := kubetest.Helm(t.Context(), append([]string{"template", "argosy", chart, "--namespace", ns}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.ParseYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// crds are installed once per package run.
var crds struct {
	once sync.Once
	err  error
}

// setup installs the Strimzi, Argo CD, ServiceMonitor and PrometheusRule CRDs once, and
// makes the namespaces named.
func setup(t *testing.T, namespaces ...string) *kubetest.Env {
	t.Helper()
	e := kubetest.Current(t)
	crds.once.Do(func() {
		ctx := context.Background()
		crds.err = errors.Join(e.InstallStrimziCRDs(ctx), e.InstallArgoCDCRDs(ctx), e.ApplyCRDs(ctx, e.Bin.MonitoringCRDs))
	})
	if crds.err != nil {
		t.Fatal(crds.err)
	}
	cs := kubetest.Clientset(t, e.Admin)
	for _, ns := range namespaces {
		_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return e
}

// TestChartOnAPIServer renders the chart with every values file in ci/,
// lints it, and server-side dry-runs every object it renders on a real
// kube-apiserver with the Strimzi, Argo CD and prometheus-operator CRDs: an
// unknown field or a value the schemas refuse fails.
func TestChartOnAPIServer(t *testing.T) {
	e := setup(t, "argosy", "argocd", "gitops")
	for _, f := range valuesFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if out, err := kubetest.Helm(t.Context(), "lint", chart, "--strict", "-f", f); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			objs := render(t, "argosy", "-f", f)
			if len(objs) == 0 {
				t.Fatal("nothing rendered")
			}
			if err := e.DryRun(t.Context(), "argosy", objs...); err != nil {
				t.Fatal(err)
			}
			checkPods(t, objs)
		})
	}
}

// TestStrimziOnAPIServer dry-runs deploy/strimzi's Kafka, node pools,
// topics and users against Strimzi 1.2's CRDs.
func TestStrimziOnAPIServer(t *testing.T) {
	e := setup(t, "kafka")
	files, err := filepath.Glob("strimzi/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("%v %v", files, err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := kubetest.ParseYAML(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.DryRun(t.Context(), "kafka", objs...); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, o := range objs {
			kinds[o.GetKind()]++
		}
	}
	want := map[string]int{"Kafka": 1, "KafkaNodePool": 2, "KafkaTopic": len(events.TopicPlan(1, 1)), "KafkaUser": 4, "ConfigMap": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}

// checkPods holds every Deployment to the chart's promises: non-root, a
// read-only root filesystem, no privilege escalation, requests and limits,
// both probes, and no service-account token unless it is the spoke's.
func checkPods(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		name := o.GetName()
		pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		if v, _, _ := unstructured.NestedBool(pod, "securityContext", "runAsNonRoot"); !v {
			t.Errorf("%s: runAsNonRoot is not set", name)
		}
		automount, found, _ := unstructured.NestedBool(pod, "automountServiceAccountToken")
		// The spoke and the mirror call the Kubernetes API; no other part
		// gets a token.
		if callsAPI := strings.HasSuffix(name, "-spoke") || strings.HasSuffix(name, "-mirror"); callsAPI == (found && !automount) {
			t.Errorf("%s: automountServiceAccountToken %v (set: %v)", name, automount, found)
		}
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			for _, path := range [][]string{
				{"securityContext", "readOnlyRootFilesystem"}, {"resources", "requests", "cpu"}, {"resources", "limits", "memory"},
				{"livenessProbe", "httpGet", "path"}, {"readinessProbe", "httpGet", "path"},
			} {
				if v, ok, _ := unstructured.NestedFieldNoCopy(c, path...); !ok || v == false {
					t.Errorf("%s/%s: %s is not set", name, c["name"], strings.Join(path, "."))
				}
			}
			if v, _, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); v {
				t.Errorf("%s: allowPrivilegeEscalation", name)
			}
			if p, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
				t.Errorf("%s: readiness probe %q", name, p)
			}
		}
	}
}

// TestBadValues: values the chart cannot work with fail the render with a
// message that names them.
func TestBadValues(t *testing.T) {
	spoke := []string{"--set", "hub.enabled=false,projector.enabled=false,hubPublicKey=k,spoke.enabled=true"}
	join := "spoke.join.hubURL=https://hub,spoke.join.token=t"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing cluster name", append(spoke, "--set", join), "/spoke/cluster"},
		{"bad cluster name", append(spoke, "--set", join+",spoke.cluster=Prod_1"), "/spoke/cluster"},
		{"unknown mode", append(spoke, "--set", join+",spoke.cluster=c,spoke.mode=wild"), "at '/spoke/mode': value must be one of 'managed', 'autonomous'"},
		{"unknown keys mode", append(spoke, "--set", join+",spoke.cluster=c,spoke.keys.mode=file"), "/spoke/keys/mode"},
		{"join without a token", append(spoke, "--set", "spoke.cluster=c,spoke.join.hubURL=https://hub"), "/spoke/join"},
		{"join with two replicas", append(spoke, "--set", join+",spoke.cluster=c,spoke.replicas=2"), "/spoke/replicas"},
		{"secret keys without a secret", append(spoke, "--set", "spoke.cluster=c,spoke.keys.mode=secret"), "/spoke/keys/secret"},
		{"no hub key", []string{"--set", "hubPublicKey="}, "/hubPublicKey"},
		{"projector without a store", []string{"--set", "hubPublicKey=k,projector.store.secret="}, "/projector/store/secret"},
		{"unknown value", []string{"--set", "hubPublicKey=k,hub.replica=2"}, "additional properties 'replica' not allowed"},
		{"topic prefix that names another's users", []string{"--set", "hubPublicKey=k,kafka.topicPrefix=prod-"}, "/kafka/topicPrefix"},
		{"ingress without a host", []string{"--set", "hubPublicKey=k,hub.ingress.enabled=true"}, "/hub/ingress/hosts"},
		{"hub TLS by another name", []string{"--set", "hubPublicKey=k,hub.tls.secretName=x"}, "additional properties 'secretName' not allowed"},
		{"misspelt top-level key", []string{"--set", "hubPublicKey=k,hubPublickey=k"}, "additional properties 'hubPublickey' not allowed"},
		{"pod annotations as a string", []string{"--set", "hubPublicKey=k,hub.podAnnotations=a"}, "at '/hub/podAnnotations': got string, want object"},
		{"pod annotation not a string", []string{"--set", "hubPublicKey=k", "--set-json", `projector.podAnnotations={"a":1}`}, "at '/projector/podAnnotations/a': got number, want string"},
		{"pod label not a string", []string{"--set", "hubPublicKey=k", "--set-json", `hub.podLabels={"tier":true}`}, "at '/hub/podLabels/tier'"},
		{"extra env as a map", []string{"--set", "hubPublicKey=k", "--set-json", `hub.extraEnv={"OTEL":"x"}`}, "at '/hub/extraEnv': got object, want array"},
		{"extra env without a name", []string{"--set", "hubPublicKey=k", "--set-json", `projector.extraEnv=[{"value":"x"}]`}, "at '/projector/extraEnv/0': missing property 'name'"},
		{"extra mount without a path", append(spoke, "--set", join+",spoke.cluster=c", "--set-json", `spoke.extraVolumeMounts=[{"name":"ca"}]`), "at '/spoke/extraVolumeMounts/0': missing property 'mountPath'"},
		{"spread without a topology key", []string{"--set", "hubPublicKey=k", "--set-json", `hub.topologySpreadConstraints=[{"maxSkew":1,"whenUnsatisfiable":"DoNotSchedule"}]`}, "at '/hub/topologySpreadConstraints/0': missing property 'topologyKey'"},
		{"priority class not a string", []string{"--set", "hubPublicKey=k,hub.priorityClassName=1"}, "at '/hub/priorityClassName': got number, want string"},
		{"security context as a list", []string{"--set", "hubPublicKey=k", "--set-json", `hub.securityContext=["ALL"]`}, "at '/hub/securityContext': got array, want object"},
		{"digest without its algorithm", []string{"--set", "hubPublicKey=k,image.digest=0123abcd"}, "/image/digest"},
		{"full name not a DNS label", []string{"--set", "hubPublicKey=k,fullnameOverride=Fleet_1"}, "at '/fullnameOverride'"},
		{"unknown Kafka authentication", []string{"--set", "hubPublicKey=k,kafka.auth.type=plain"}, "at '/kafka/auth/type': value must be one of 'tls', 'scram-sha-512'"},
		{"write error ratio above 1", []string{"--set", "hubPublicKey=k,prometheusRule.alerts.hubWriteErrors.ratio=2"}, "/prometheusRule/alerts/hubWriteErrors/ratio"},
		{"misspelt alert", []string{"--set", "hubPublicKey=k,prometheusRule.alerts.clusterstale.enabled=false"}, "additional properties 'clusterstale' not allowed"},
		{"spoke in Argo CD's namespace", append(spoke, "--set", join+",spoke.cluster=c", "--namespace", "argocd"), "install it in a namespace of its own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", "argosy", chart}, c.args...)
			_, err := kubetest.Helm(t.Context(), args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestChartUserSecretsFollowThePrefix: left empty, the hub's and the
// projector's KafkaUser Secrets are the KafkaUsers deploy/internal/gen
// makes for the same topic prefix.
func TestChartUserSecretsFollowThePrefix(t *testing.T) {
	for _, prefix := range []string{"", "prod."} {
		n := deploy.NamesFor(prefix)
		want := map[string]string{"argosy-hub": n.HubUser, "argosy-projector": n.ProjectorUser}
		got := map[string]string{}
		for _, o := range render(t, "argosy", "--set", "hubPublicKey=k,kafka.topicPrefix="+prefix) {
			if o.GetKind() != "Deployment" {
				continue
			}
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if v := v.(map[string]any); v["name"] == "kafka-user" {
					got[o.GetName()], _, _ = unstructured.NestedString(v, "secret", "secretName")
				}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("prefix %q: KafkaUser Secrets (-want +got):\n%s", prefix, d)
		}
		// With SCRAM the KafkaUser's name is the SASL user too.
		users := map[string]string{}
		for _, o := range render(t, "argosy", "--set", "hubPublicKey=k,kafka.auth.type=scram-sha-512,kafka.topicPrefix="+prefix) {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
			for _, e := range env {
				if e := e.(map[string]any); e["name"] == "ARGOSY_KAFKA_SASL_USERNAME" {
					users[o.GetName()], _ = e["value"].(string)
				}
			}
		}
		if d := cmp.Diff(want, users); d != "" {
			t.Errorf("prefix %q: SASL users (-want +got):\n%s", prefix, d)
		}
	}
}

// TestReadAPIsServeTLS: with a TLS Secret each API that takes bearer
// tokens, the hub's and the projector's read API, gets the certificate's
// files from the whole Secret (so renewals reach them) and serves TLS.
func TestReadAPIsServeTLS(t *testing.T) {
	for _, o := range render(t, "argosy", "-f", filepath.Join(chart, "ci", "tls-values.yaml")) {
		if o.GetKind() != "Deployment" || strings.HasSuffix(o.GetName(), "-spoke") {
			continue
		}
		pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		c := pod["containers"].([]any)[0].(map[string]any)
		env := map[string]string{}
		for _, e := range c["env"].([]any) {
			e := e.(map[string]any)
			env[e["name"].(string)], _ = e["value"].(string)
		}
		if env["ARGOSY_TLS_CERT"] != "/etc/argosy/tls/tls.crt" || env["ARGOSY_TLS_KEY"] != "/etc/argosy/tls/tls.key" {
			t.Errorf("%s: TLS env %q %q", o.GetName(), env["ARGOSY_TLS_CERT"], env["ARGOSY_TLS_KEY"])
		}
		mounted := false
		for _, m := range c["volumeMounts"].([]any) {
			m := m.(map[string]any)
			mounted = mounted || (m["name"] == "tls" && m["mountPath"] == "/etc/argosy/tls" && m["subPath"] == nil)
		}
		if !mounted {
			t.Errorf("%s: the TLS Secret is not mounted whole at /etc/argosy/tls", o.GetName())
		}
	}
}

// TestChartKafkaRack: kafka.rack reaches every part as ARGOSY_KAFKA_RACK
// (--kafka-rack), and left empty, none.
func TestChartKafkaRack(t *testing.T) {
	for _, rack := range []string{"", "eu-west-1a"} {
		got := map[string]string{}
		for _, o := range render(t, "argosy", "--set", "hubPublicKey=k,spoke.enabled=true,spoke.cluster=c,spoke.join.hubURL=https://hub,spoke.join.token=t,kafka.rack="+rack) {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
			got[o.GetName()] = "(none)"
			for _, e := range env {
				if e := e.(map[string]any); e["name"] == "ARGOSY_KAFKA_RACK" {
					got[o.GetName()], _ = e["value"].(string)
				}
			}
		}
		want := rack
		if want == "" {
			want = "(none)"
		}
		if len(got) < 3 {
			t.Fatalf("rack %q: Deployments %v, want the hub's, the projector's and the spoke's", rack, got)
		}
		for name, v := range got {
			if v != want {
				t.Errorf("rack %q: %s has ARGOSY_KAFKA_RACK %q, want %q", rack, name, v, want)
			}
		}
	}
}
