//go:build integration

package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// rendered is the part of a render the policies are checked against.
type rendered struct {
	objs     []*unstructured.Unstructured
	policies []networkingv1.NetworkPolicy
	pods     map[string]endpoint          // by part
	deploys  map[string]appsv1.Deployment // by part
	services []corev1.Service
}

// renderPolicies renders the chart into namespace argosy, dry-runs it on
// the apiserver, and reads its NetworkPolicies, pods and Services.
func renderPolicies(t *testing.T, args ...string) rendered {
	t.Helper()
	e := setup(t, "argosy", "argocd")
	r := rendered{objs: render(t, "argosy", args...), pods: map[string]endpoint{}, deploys: map[string]appsv1.Deployment{}}
	if err := e.DryRun(t.Context(), "argosy", r.objs...); err != nil {
		t.Fatal(err)
	}
	for _, o := range r.objs {
		switch o.GetKind() {
		case "NetworkPolicy":
			var p networkingv1.NetworkPolicy
			convert(t, o, &p)
			p.Namespace = "argosy"
			r.policies = append(r.policies, p)
		case "Deployment":
			var d appsv1.Deployment
			convert(t, o, &d)
			part := d.Spec.Template.Labels["app.kubernetes.io/component"]
			pod := endpoint{Namespace: "argosy", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "argosy"},
				Labels: d.Spec.Template.Labels, Ports: map[string]int32{}}
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					pod.Ports[p.Name] = p.ContainerPort
				}
			}
			r.pods[part], r.deploys[part] = pod, d
		case "Service":
			var s corev1.Service
			convert(t, o, &s)
			r.services = append(r.services, s)
		}
	}
	return r
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// Endpoints the policies are tried against.
var (
	stranger   = endpoint{Namespace: "other", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "other"}, Labels: map[string]string{"app": "curious"}}
	monitoring = endpoint{Namespace: "monitoring", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}, Labels: map[string]string{"app": "prometheus"}}
	kafkaPod   = endpoint{Namespace: "kafka", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "kafka"}, Labels: map[string]string{"strimzi.io/kind": "Kafka"}}
	dnsPod     = endpoint{Namespace: "kube-system", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}, Labels: map[string]string{"k8s-app": "kube-dns"}}
	outside    = endpoint{IP: "203.0.113.7"}
)

func (r rendered) check(t *testing.T, from, to endpoint, port int32, proto corev1.Protocol, want bool, what string) {
	t.Helper()
	if got := allowed(r.policies, flow{From: from, To: to, Port: port, Protocol: proto}); got != want {
		t.Errorf("%s, port %d: allowed %v, want %v (%d NetworkPolicies)", what, port, got, want, len(r.policies))
	}
}

// TestNetworkPolicies evaluates the chart's NetworkPolicies, as the real
// apiserver takes them, by networking/v1's rules: a pod of another
// namespace reaches neither metrics port, nor the projector's read API
// while it is off; the hub's API is reachable from anywhere; scrapers in
// the monitoring namespace reach the metrics; the metrics are on no
// Service but the parts' -metrics ones.
func TestNetworkPolicies(t *testing.T) {
	r := renderPolicies(t, "-f", chart+"/ci/hub-projector-values.yaml")
	hub, projector := r.pods["hub"], r.pods["projector"]
	if hub.Labels == nil || projector.Labels == nil {
		t.Fatalf("no hub or projector Deployment: %v", r.pods)
	}
	r.check(t, stranger, hub, 9466, "", false, "a pod of another namespace → the hub's metrics")
	r.check(t, stranger, projector, 9465, "", false, "a pod of another namespace → the projector's metrics")
	r.check(t, stranger, projector, 8080, "", false, "a pod of another namespace → the projector's read API, off")
	r.check(t, outside, projector, 9465, "", false, "an outside address → the projector's metrics")
	r.check(t, monitoring, hub, 9466, "", true, "a pod of namespace monitoring → the hub's metrics")
	r.check(t, monitoring, projector, 9465, "", true, "a pod of namespace monitoring → the projector's metrics")
	r.check(t, stranger, hub, 8080, "", true, "a pod of another namespace → the hub's API")
	r.check(t, outside, hub, 8080, "", true, "an outside address → the hub's API")
	r.check(t, projector, kafkaPod, 9093, "", true, "the projector → Kafka")
	r.check(t, projector, outside, 5432, "", true, "the projector → PostgreSQL")
	r.check(t, projector, dnsPod, 53, corev1.ProtocolUDP, true, "the projector → DNS")
	r.check(t, projector, outside, 443, "", false, "the projector → anything else")
	r.check(t, hub, outside, 22, "", false, "the hub → anything else")

	for _, s := range r.services {
		for _, p := range s.Spec.Ports {
			if p.Name == "metrics" && !strings.HasSuffix(s.Name, "-metrics") {
				t.Errorf("Service %s publishes the metrics port %d", s.Name, p.Port)
			}
			if p.Name == "metrics" && s.Spec.Type != "" && s.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("Service %s: type %s", s.Name, s.Spec.Type)
			}
		}
		if s.Name == "argosy-projector" {
			t.Errorf("the projector's read API is off, and its Service %s is rendered", s.Name)
		}
	}
	pc := r.deploys["projector"].Spec.Template.Spec.Containers[0]
	if _, ok := r.pods["projector"].Ports["http"]; ok || slices.ContainsFunc(pc.Env, func(e corev1.EnvVar) bool { return e.Name == "ARGOSY_LISTEN" }) {
		t.Errorf("the projector's read API is off, and its pod has an http port or ARGOSY_LISTEN: %v %v", pc.Ports, pc.Env)
	}
}

// TestNetworkPolicyProjectorReadAPI: with projector.readAPI.enabled the
// read API's port is open as the hub's API is, with the hub's tokens file
// mounted; its metrics stay closed.
func TestNetworkPolicyProjectorReadAPI(t *testing.T) {
	r := renderPolicies(t, "-f", chart+"/ci/hub-projector-values.yaml", "--set", "projector.readAPI.enabled=true")
	projector := r.pods["projector"]
	r.check(t, stranger, projector, 8080, "", true, "a pod of another namespace → the projector's read API, on")
	r.check(t, stranger, projector, 9465, "", false, "a pod of another namespace → the projector's metrics")
	pod := r.deploys["projector"].Spec.Template.Spec
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["ARGOSY_LISTEN"] == "" || env["ARGOSY_TOKENS"] != "/etc/argosy/tokens/tokens.yaml" {
		t.Errorf("the projector's env: %v", env)
	}
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "argosy-hub-tokens" }) {
		t.Errorf("the projector does not mount the hub's tokens Secret: %v", pod.Volumes)
	}
	if !slices.ContainsFunc(r.services, func(s corev1.Service) bool { return s.Name == "argosy-projector" }) {
		t.Error("no Service for the projector's read API")
	}
}

// TestNetworkPolicySpokeEgress: a spoke sends DNS, Kafka, the
// kube-apiserver's and the hub's traffic, and nothing else; no one but the
// scrapers reaches its metrics.
func TestNetworkPolicySpokeEgress(t *testing.T) {
	r := renderPolicies(t, "-f", chart+"/ci/spoke-join-values.yaml", "--set", "spoke.join.hubURL=https://hub.example.com:8443")
	spoke := r.pods["spoke"]
	if spoke.Labels == nil {
		t.Fatal("no spoke Deployment")
	}
	r.check(t, stranger, spoke, 9464, "", false, "a pod of another namespace → the spoke's metrics")
	r.check(t, monitoring, spoke, 9464, "", true, "a pod of namespace monitoring → the spoke's metrics")
	want := []string{"53/TCP", "53/UDP", "443/TCP", "6443/TCP", "8443/TCP", "9093/TCP"} // DNS, the apiserver, the hub, Kafka
	slices.Sort(want)
	for _, dst := range []endpoint{outside, kafkaPod, dnsPod, stranger} {
		var got []string
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
			for _, port := range []int32{22, 53, 80, 443, 2379, 5432, 6443, 8080, 8443, 9092, 9093, 9464, 9465, 9466, 10250} {
				if allowed(r.policies, flow{From: spoke, To: dst, Port: port, Protocol: proto}) {
					got = append(got, fmt.Sprintf("%d/%s", port, proto))
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("the spoke → %s/%v: allowed %v, want %v", dst.Namespace, dst.IP, got, want)
		}
	}
}

// TestNetworkPolicyMirror: the mirror reaches the kube-apiserver and the
// release's hub pods on their API port, and nothing else (not Kafka, not
// the hub's metrics); only scrapers reach its metrics. With mirror.hubURL
// set, it reaches that URL's port instead. Its webhook's and UI proxy's
// ports are open only when they are on, and then the proxy reaches Argo
// CD's API server's port.
func TestNetworkPolicyMirror(t *testing.T) {
	r := renderPolicies(t, "-f", chart+"/ci/hub-projector-values.yaml", "--set", "mirror.enabled=true")
	hub, m := r.pods["hub"], r.pods["mirror"]
	if m.Labels == nil {
		t.Fatalf("no mirror Deployment: %v", r.pods)
	}
	r.check(t, m, hub, 8080, "", true, "the mirror → the hub's API")
	r.check(t, m, hub, 9466, "", false, "the mirror → the hub's metrics")
	r.check(t, m, outside, 6443, "", true, "the mirror → the kube-apiserver")
	r.check(t, m, kafkaPod, 9093, "", false, "the mirror → Kafka")
	r.check(t, m, outside, 8080, "", false, "the mirror → another address's 8080")
	r.check(t, m, dnsPod, 53, corev1.ProtocolUDP, true, "the mirror → DNS")
	r.check(t, stranger, m, 9467, "", false, "a pod of another namespace → the mirror's metrics")
	r.check(t, monitoring, m, 9467, "", true, "a pod of namespace monitoring → the mirror's metrics")

	r = renderPolicies(t, "-f", chart+"/ci/mirror-values.yaml")
	m = r.pods["mirror"]
	r.check(t, m, outside, 8443, "", true, "the mirror → mirror.hubURL's port, 8443")
	r.check(t, m, outside, 8080, "", false, "the mirror → another port")
	r.check(t, stranger, m, 9443, "", false, "a pod of another namespace → the mirror's 9443, with no webhook")
	r.check(t, stranger, m, 8080, "", false, "a pod of another namespace → the mirror's 8080, with no UI proxy")

	// With its webhook and its UI proxy: the API server reaches the
	// webhook, the UI's users the proxy, and the proxy Argo CD's API server.
	r = renderPolicies(t, "-f", chart+"/ci/mirror-admission-values.yaml")
	m = r.pods["mirror"]
	r.check(t, outside, m, 9443, "", true, "an address outside the cluster (the API server) → the webhook")
	r.check(t, stranger, m, 8080, "", true, "a pod of another namespace (an ingress) → the UI proxy")
	r.check(t, m, outside, 443, "", true, "the mirror → mirror.uiProxy.argocdServer's port, 443")
	r.check(t, stranger, m, 9467, "", false, "a pod of another namespace → the mirror's metrics, still")
	r = renderPolicies(t, "-f", chart+"/ci/mirror-admission-values.yaml", "--set", "mirror.uiProxy.argocdServer=http://argocd-server.argocd.svc:8081")
	m = r.pods["mirror"]
	r.check(t, m, outside, 8081, "", true, "the mirror → mirror.uiProxy.argocdServer's port, 8081")
}
