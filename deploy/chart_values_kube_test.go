//go:build integration

package deploy_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// deployments renders the chart with args and returns its Deployments by
// name, typed.
func deployments(t *testing.T, args ...string) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, o := range render(t, "argosy", args...) {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		out[d.Name] = &d
	}
	return out
}

// env returns a container's environment by name.
func env(c *corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func volume(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

func mount(c *corev1.Container, name string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// TestExtendedValues renders ci/extended-values.yaml and checks that each
// value reached its place in each Deployment: pod metadata, priority class,
// topology spread with the part's selector, the pinned image, extra env,
// envFrom, volumes and mounts, SCRAM in place of the client certificate,
// and the security contexts with the overridden fields changed and the
// chart's other defaults kept.
func TestExtendedValues(t *testing.T) {
	setup(t)
	deps := deployments(t, "-f", filepath.Join(chart, "ci", "extended-values.yaml"))
	otel := corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability:4317"}
	pgCA := corev1.Volume{Name: "postgres-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "postgres-ca", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}
	pgMount := corev1.VolumeMount{Name: "postgres-ca", MountPath: "/etc/argosy/postgres-ca", ReadOnly: true}
	const digest = "sha256:0f3c1e5a9d7b2c4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
	for _, c := range []struct {
		name, component, user, image, tier, priority string
		envFrom                                      []corev1.EnvFromSource
		volume                                       corev1.Volume
		mount                                        corev1.VolumeMount
		pod                                          corev1.PodSecurityContext
		container                                    corev1.SecurityContext
	}{
		{
			name: "argosy-hub", component: "hub", user: "argosy-hub", tier: "control-plane", priority: "argosy-critical",
			image:   "registry.example/argosy@" + digest,
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "argosy-otel"}}}},
			volume:  pgCA, mount: pgMount,
			// runAsUser and runAsGroup overridden, the rest kept.
			pod: corev1.PodSecurityContext{RunAsNonRoot: to(true), RunAsUser: to[int64](10001), RunAsGroup: to[int64](10001),
				FSGroup: to[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			// A capability added beside the dropped ALL, a seccomp profile added.
			container: corev1.SecurityContext{ReadOnlyRootFilesystem: to(true), AllowPrivilegeEscalation: to(false),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
		{
			name: "argosy-projector", component: "projector", user: "argosy-projector", tier: "views", priority: "argosy-critical",
			image:   "registry.example/argosy@" + digest,
			envFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "argosy-projector-env"}}}},
			volume:  pgCA, mount: pgMount,
			// The seccomp profile replaced; user and group kept.
			pod: corev1.PodSecurityContext{RunAsNonRoot: to(true), RunAsUser: to[int64](65532), RunAsGroup: to[int64](65532),
				FSGroup: to[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: to("argosy.json")}},
			container: corev1.SecurityContext{ReadOnlyRootFilesystem: to(true), AllowPrivilegeEscalation: to(false), RunAsNonRoot: to(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		},
		{
			name: "argosy-spoke", component: "spoke", user: "argosy-spoke-prod-eu-1", tier: "agent", priority: "system-cluster-critical",
			image:   "registry.example/argosy-spoke@sha256:1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3",
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "argosy-otel"}, Optional: to(true)}}},
			volume:  corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: to(resource.MustParse("16Mi"))}}},
			mount:   corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
			pod: corev1.PodSecurityContext{RunAsNonRoot: to(true), RunAsUser: to[int64](65532), RunAsGroup: to[int64](65532),
				FSGroup: to[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				FSGroupChangePolicy: to(corev1.FSGroupChangeOnRootMismatch)},
			container: corev1.SecurityContext{ReadOnlyRootFilesystem: to(true), AllowPrivilegeEscalation: to(false), Privileged: to(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		},
	} {
		t.Run(c.component, func(t *testing.T) {
			d := deps[c.name]
			if d == nil {
				t.Fatalf("no Deployment %s among %v", c.name, keys(deps))
			}
			meta, pod := d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec
			if got := meta.Annotations["example.com/team"]; got != "platform" {
				t.Errorf("pod annotation example.com/team = %q", got)
			}
			if c.component != "hub" && meta.Annotations["checksum/hub-key"] == "" {
				t.Error("the chart's checksum/hub-key annotation is gone")
			}
			if got := meta.Labels["example.com/tier"]; got != c.tier {
				t.Errorf("pod label example.com/tier = %q, want %q", got, c.tier)
			}
			for k, v := range d.Spec.Selector.MatchLabels {
				if meta.Labels[k] != v {
					t.Errorf("pod label %s = %q, the selector wants %q", k, meta.Labels[k], v)
				}
			}
			if pod.PriorityClassName != c.priority {
				t.Errorf("priorityClassName %q, want %q", pod.PriorityClassName, c.priority)
			}
			if len(pod.TopologySpreadConstraints) == 0 {
				t.Fatal("no topologySpreadConstraints")
			}
			zone := pod.TopologySpreadConstraints[0]
			if zone.TopologyKey != "topology.kubernetes.io/zone" || zone.WhenUnsatisfiable != corev1.ScheduleAnyway ||
				zone.LabelSelector == nil || !cmp.Equal(zone.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
				t.Errorf("spread constraint without a selector did not get the part's: %+v", zone)
			}
			if c.component == "hub" {
				own := pod.TopologySpreadConstraints[1].LabelSelector
				if want := map[string]string{"app.kubernetes.io/name": "argosy"}; own == nil || !cmp.Equal(own.MatchLabels, want) {
					t.Errorf("a constraint's own selector was replaced: %+v", own)
				}
			}
			if diff := cmp.Diff(&c.pod, pod.SecurityContext); diff != "" {
				t.Errorf("pod securityContext (-want +got):\n%s", diff)
			}
			ctr := &pod.Containers[0]
			if ctr.Image != c.image {
				t.Errorf("image %q, want %q", ctr.Image, c.image)
			}
			if diff := cmp.Diff(&c.container, ctr.SecurityContext); diff != "" {
				t.Errorf("container securityContext (-want +got):\n%s", diff)
			}
			e := env(ctr)
			if e[otel.Name] != otel {
				t.Errorf("%s = %+v", otel.Name, e[otel.Name])
			}
			if got := ctr.Env[len(ctr.Env)-1].Name; c.component == "hub" && got != "OTEL_RESOURCE_ATTRIBUTES" {
				t.Errorf("extraEnv is not last: the last variable is %s", got)
			}
			if diff := cmp.Diff(c.envFrom, ctr.EnvFrom); diff != "" {
				t.Errorf("envFrom (-want +got):\n%s", diff)
			}
			checkSCRAM(t, pod, ctr, c.user)
			if v := volume(pod, c.volume.Name); v == nil || !cmp.Equal(*v, c.volume) {
				t.Errorf("extra volume %+v, want %+v", v, c.volume)
			}
			if m := mount(ctr, c.mount.Name); m == nil || *m != c.mount {
				t.Errorf("extra mount %+v, want %+v", m, c.mount)
			}
		})
	}
}

// checkSCRAM: Kafka over TLS with the cluster CA, authenticated by
// SCRAM-SHA-512 as user, with the password file from the user's Secret
// (key password) and no client certificate.
func checkSCRAM(t *testing.T, pod *corev1.PodSpec, ctr *corev1.Container, user string) {
	t.Helper()
	e := env(ctr)
	for name, want := range map[string]string{
		"ARGOSY_KAFKA_TLS": "true", "ARGOSY_KAFKA_CA_FILE": "/etc/argosy/kafka-ca/ca.crt",
		"ARGOSY_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "ARGOSY_KAFKA_SASL_USERNAME": user,
		"ARGOSY_KAFKA_SASL_PASSWORD_FILE": "/etc/argosy/kafka-user/password",
		"ARGOSY_KAFKA_BROKERS":            "argosy-kafka-bootstrap.kafka:9095",
	} {
		if got := e[name].Value; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"ARGOSY_KAFKA_CERT_FILE", "ARGOSY_KAFKA_KEY_FILE"} {
		if _, ok := e[name]; ok {
			t.Errorf("%s is set with SCRAM", name)
		}
	}
	want := corev1.Volume{Name: "kafka-user", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: user, Items: []corev1.KeyToPath{{Key: "password", Path: "password"}}}}}
	if v := volume(pod, "kafka-user"); v == nil || !cmp.Equal(*v, want) {
		t.Errorf("kafka-user volume %+v, want %+v", v, want)
	}
	if m := mount(ctr, "kafka-user"); m == nil || m.MountPath != "/etc/argosy/kafka-user" || m.SubPath != "" {
		t.Errorf("kafka-user mount %+v, want the whole Secret at /etc/argosy/kafka-user", m)
	}
}

// TestDefaultValues: without the extending values, the chart pulls by tag,
// authenticates with the client certificate and keeps its secure defaults;
// a false set over a default true stays false.
func TestDefaultValues(t *testing.T) {
	setup(t)
	deps := deployments(t, "--set", "hubPublicKey=k,hub.securityContext.readOnlyRootFilesystem=false")
	hub, projector := deps["argosy-hub"], deps["argosy-projector"]
	if hub == nil || projector == nil {
		t.Fatalf("Deployments %v", keys(deps))
	}
	ctr := &projector.Spec.Template.Spec.Containers[0]
	if ctr.Image != "argosy:0.1.0" {
		t.Errorf("image %q, want argosy:0.1.0", ctr.Image)
	}
	e := env(ctr)
	if e["ARGOSY_KAFKA_CERT_FILE"].Value != "/etc/argosy/kafka-user/user.crt" || e["ARGOSY_KAFKA_KEY_FILE"].Value != "/etc/argosy/kafka-user/user.key" {
		t.Errorf("client certificate env: %+v %+v", e["ARGOSY_KAFKA_CERT_FILE"], e["ARGOSY_KAFKA_KEY_FILE"])
	}
	if _, ok := e["ARGOSY_KAFKA_SASL_MECHANISM"]; ok {
		t.Error("SASL is set by default")
	}
	wantPod := &corev1.PodSecurityContext{RunAsNonRoot: to(true), RunAsUser: to[int64](65532), RunAsGroup: to[int64](65532),
		FSGroup: to[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if diff := cmp.Diff(wantPod, projector.Spec.Template.Spec.SecurityContext); diff != "" {
		t.Errorf("pod securityContext (-want +got):\n%s", diff)
	}
	wantCtr := &corev1.SecurityContext{ReadOnlyRootFilesystem: to(true), AllowPrivilegeEscalation: to(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if diff := cmp.Diff(wantCtr, ctr.SecurityContext); diff != "" {
		t.Errorf("container securityContext (-want +got):\n%s", diff)
	}
	wantCtr.ReadOnlyRootFilesystem = to(false)
	if diff := cmp.Diff(wantCtr, hub.Spec.Template.Spec.Containers[0].SecurityContext); diff != "" {
		t.Errorf("hub container securityContext with readOnlyRootFilesystem=false (-want +got):\n%s", diff)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func to[T any](v T) *T { return &v }

// TestFullnameOverride: fullnameOverride names the objects in place of the
// release, and what refers to them follows.
func TestFullnameOverride(t *testing.T) {
	setup(t)
	deps := deployments(t, "--set", "hubPublicKey=k,fullnameOverride=fleet")
	if len(deps) != 2 || deps["fleet-hub"] == nil || deps["fleet-projector"] == nil {
		t.Fatalf("Deployments %v, want fleet-hub and fleet-projector", keys(deps))
	}
	cms := map[string]bool{}
	for _, o := range render(t, "argosy", "--set", "hubPublicKey=k,fullnameOverride=fleet") {
		if o.GetKind() == "ConfigMap" {
			cms[o.GetName()] = true
		}
	}
	v := volume(&deps["fleet-projector"].Spec.Template.Spec, "hub")
	if v == nil || v.ConfigMap == nil || !cms[v.ConfigMap.Name] || v.ConfigMap.Name != "fleet-hub-public-key" {
		t.Errorf("the projector's hub key volume %+v, ConfigMaps %v", v, cms)
	}
}
