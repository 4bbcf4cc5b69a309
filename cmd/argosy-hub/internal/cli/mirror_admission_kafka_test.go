//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/mirror"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// TestChangesInTheMirrorReachTheCluster runs the real mirror with its
// admission webhook registered on a real apiserver, beside a real hub,
// broker, spoke and Argo CD. People change the mirrored Application as
// Kubernetes users (impersonated, as kubectl --as would): a viewer's sync
// is refused with the hub's words and appends nothing, and the mirror
// writes why on the object as a condition; a deployer's spec
// edit reaches the cluster's Application; the deployer's sync is carried
// out by the cluster's Argo CD once, and the mirrored object keeps no
// operation; each call is audited as the user, via the mirror's token; a
// review the API server sends twice is one config record and one sync;
// the deployer's delete takes the Application off the cluster and the
// mirror.
func TestChangesInTheMirrorReachTheCluster(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	token := f.newToken("mirror", "viewer")
	f.grant("mirror", []auth.KubernetesGrant{{Group: "team-a", Role: auth.RoleDeployer}, {User: "victor", Role: auth.RoleViewer}})
	a := syncedApp(t, e, f, "w-", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	tokenFile := filepath.Join(f.dir, "mirror-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := tlstest.NewCA(t, "mirror-webhook")
	cert, key := ca.WriteFiles(t, t.TempDir(), "mirror")
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	f.startMirror(e, a.url, tokenFile, "--admission-address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--admission-tls-cert", cert, "--admission-tls-key", key, "--mirror-user", "admin")
	mirrorNS := "mirror-" + a.cluster
	waitMirrored(t, a.dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS), a.name, a.commit)
	registerWebhook(t, a.dyn, mirrorNS, fmt.Sprintf("https://127.0.0.1:%d/", ports[0]), ca.PEM)

	as := func(user string, groups ...string) dynamic.ResourceInterface {
		cfg := rest.CopyConfig(e.Admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return dyn.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	}
	allowEditing(t, a.dyn, mirrorNS)
	victor, alice := as("victor"), as("alice", "team-a")
	configAt := configEnd(t, f)
	history := func() int {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := unstructured.NestedSlice(got.Object, "status", "history")
		return len(h)
	}
	before := history()

	sync := []byte(`{"operation":{"sync":{"revision":"main"},"initiatedBy":{"username":"someone"}}}`)
	_, err = victor.Patch(t.Context(), a.name, types.MergePatchType, sync, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "the hub refused") || !strings.Contains(err.Error(), "role viewer") {
		t.Errorf("victor's sync: %v, want refused with the hub's words", err)
	}
	if now := configEnd(t, f); now != configAt {
		t.Errorf("a refused change moved the config topic's end offsets from %d to %d", configAt, now)
	}
	// The change did not land; the object says why, where Argo CD's UI
	// shows it.
	waitRefusedCondition(t, as("admin"), a.name, "k8s:victor's sync was refused")

	edit := []byte(`{"spec":{"info":[{"name":"owner","value":"alice"}]}}`)
	if _, err := alice.Patch(t.Context(), a.name, types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatalf("alice's spec edit: %v", err)
	}
	waitFor(t, 2*time.Minute, "alice's edit on the cluster's Application", func() bool {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		info, _, _ := unstructured.NestedSlice(got.Object, "spec", "info")
		return err == nil && len(info) == 1 && fmt.Sprint(info[0]) == "map[name:owner value:alice]"
	})

	got, err := alice.Patch(t.Context(), a.name, types.MergePatchType, sync, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("alice's sync: %v", err)
	}
	if _, ok := got.Object["operation"]; ok {
		t.Error("the mirrored Application kept the operation: the cluster carries it out, not the mirror cluster")
	}
	waitFor(t, 2*time.Minute, "the cluster's Argo CD to run alice's sync", func() bool { return history() == before+1 })
	time.Sleep(5 * time.Second)
	if n := history(); n != before+1 {
		// Each entry's id, revision, start and who began it, to tell a
		// sync run twice from one of Argo CD's own.
		got, _ := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		h, _, _ := unstructured.NestedSlice(got.Object, "status", "history")
		op, _, _ := unstructured.NestedMap(got.Object, "status", "operationState")
		t.Errorf("the cluster's history grew by %d, want the one sync; history %v; last operation %v", n-before, h, op)
	}

	want := map[string]bool{"applications.apply": true, "applications.operate": true}
	waitFor(t, time.Minute, "the audit to name alice via the mirror", func() bool {
		var audit struct {
			Items []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
				Via  string `json:"via"`
			} `json:"items"`
		}
		if !getJSON(t, a.url+"/api/v1/audit?actor=k8s:alice&limit=100", f.token, &audit) {
			return false
		}
		seen := map[string]bool{}
		for _, it := range audit.Items {
			if it.Kind == "api" && it.Via == "mirror" {
				seen[it.Name] = true
			}
		}
		return fmt.Sprint(seen) == fmt.Sprint(want)
	})

	// The API server may send a review again (a timeout, a second
	// replica of the webhook answering): the same request's uid is one
	// hub write, and one sync on the cluster.
	records := func() int { return len(kafkatest.Committed(t, f.topics[events.TopicConfig])) }
	before, recordsAt := history(), records()
	review := syncReview(t, as("admin"), a.name, "alice", "team-a")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	for i := range 2 {
		resp, err := hc.Post(fmt.Sprintf("https://127.0.0.1:%d/", ports[0]), "application/json", bytes.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Response struct{ Allowed bool } `json:"response"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || !out.Response.Allowed {
			t.Fatalf("the review, sent %d times: %v %+v", i+1, err, out)
		}
	}
	waitFor(t, 2*time.Minute, "the cluster's Argo CD to run the sync sent twice", func() bool { return history() > before })
	time.Sleep(5 * time.Second)
	if n := history(); n != before+1 {
		t.Errorf("a review sent twice grew the cluster's history by %d, want 1", n-before)
	}
	if n := records() - recordsAt; n != 1 {
		t.Errorf("a review sent twice appended %d config records, want 1", n)
	}

	if err := alice.Delete(t.Context(), a.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("alice's delete: %v", err)
	}
	waitFor(t, 2*time.Minute, "the Application to leave the cluster", func() bool {
		_, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// allowEditing lets every authenticated user read, change and delete the
// Applications of namespace ns: what Kubernetes allows; the hub decides.
func allowEditing(t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": "edit-applications"},
		"rules": []any{map[string]any{"apiGroups": []any{"argoproj.io"}, "resources": []any{"applications"},
			"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}}}}}
	binding := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "edit-applications"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "edit-applications"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}}}}
	for resource, obj := range map[string]*unstructured.Unstructured{"roles": role, "rolebindings": binding} {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// grant gives the token name of the fixture's tokens file actFor grants.
func (f *fixture) grant(name string, grants []auth.KubernetesGrant) {
	f.t.Helper()
	path := filepath.Join(f.dir, "tokens.yaml")
	file, err := auth.LoadTokenFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range file.Tokens {
		if file.Tokens[i].Name == name {
			file.Tokens[i].ActFor = grants
		}
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// registerWebhook registers the mirror's admission webhook at url for
// the Applications of namespace ns alone, as the chart does for every
// mirror namespace, and removes it when the test ends.
func registerWebhook(t *testing.T, dyn dynamic.Interface, ns, url string, caPEM []byte) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	name := "argosy-mirror-" + ns
	cfg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": name},
		"webhooks": []any{map[string]any{
			"name":         "applications.mirror.argosy.dev",
			"clientConfig": map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
			"rules": []any{map[string]any{"apiGroups": []any{"argoproj.io"}, "apiVersions": []any{"*"},
				"operations": []any{"CREATE", "UPDATE", "DELETE"}, "resources": []any{"applications"}, "scope": "Namespaced"}},
			"namespaceSelector":       map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"sideEffects":             "NoneOnDryRun",
			"admissionReviewVersions": []any{"v1"},
			"failurePolicy":           "Fail",
			"timeoutSeconds":          int64(15),
			"reinvocationPolicy":      "Never",
		}},
	}}
	if _, err := dyn.Resource(gvr).Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete the webhook configuration: %v", err)
		}
	})
}

// syncReview is an AdmissionReview of a Sync of the mirrored Application
// name, as the API server sends it for user of groups: the object as it
// is, with an operation.
func syncReview(t *testing.T, apps dynamic.ResourceInterface, name, user string, groups ...string) []byte {
	t.Helper()
	old, err := apps.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj := old.DeepCopy()
	obj.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "main"}}
	oldJSON, _ := old.MarshalJSON()
	newJSON, _ := obj.MarshalJSON()
	review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": map[string]any{
		"uid":      "review-sent-twice-" + name,
		"kind":     map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application"},
		"resource": map[string]any{"group": "argoproj.io", "version": "v1alpha1", "resource": "applications"},
		"name":     name, "namespace": old.GetNamespace(), "operation": "UPDATE",
		"userInfo": map[string]any{"username": user, "groups": groups},
		"object":   json.RawMessage(newJSON), "oldObject": json.RawMessage(oldJSON),
	}}
	b, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitRefusedCondition waits for the mirror to write the condition of a
// refused change on the mirrored Application name, its message beginning
// with prefix.
func waitRefusedCondition(t *testing.T, apps dynamic.ResourceInterface, name, prefix string) {
	t.Helper()
	waitFor(t, time.Minute, "the refusal's condition on the mirrored Application", func() bool {
		got, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cs, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range cs {
			m, _ := c.(map[string]any)
			if msg, _ := m["message"].(string); m["type"] == mirror.ConditionRefused && strings.HasPrefix(msg, prefix) {
				return true
			}
		}
		return false
	})
}
