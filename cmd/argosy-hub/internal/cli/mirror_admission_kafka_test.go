//go:build integration

package cli_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
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
// change the API server reviews twice is one config record and one sync;
// a relay mark written past the webhook asks nothing and is taken off;
// the deployer's delete takes the Application off the cluster and the
// mirror.
func TestChangesInTheMirrorReachTheCluster(t *testing.T) {
	w := startWebhookMirror(t)
	f, a, mirrorNS, ca := w.f, w.a, w.mirrorNS, w.ca
	as := func(user string, groups ...string) dynamic.ResourceInterface { return w.as(t, user, groups...) }
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
	_, err := victor.Patch(t.Context(), a.name, types.MergePatchType, sync, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "the hub refused") || !strings.Contains(err.Error(), "role viewer") {
		t.Errorf("victor's sync: %v, want refused with the hub's words", err)
	}
	if now := configEnd(t, f); now != configAt {
		t.Errorf("a refused change moved the config topic's end offsets from %d to %d", configAt, now)
	}
	// The change did not land; the object says why, where Argo CD's UI
	// shows it.
	waitRefusedCondition(t, as("admin"), a.name, "k8s:victor's sync was refused")

	// The API server admits a change again when its write conflicts with
	// another made meanwhile (the mirror's own status writes, Argo CD's
	// API server retrying its update): each time a review with a new uid.
	// One change is one hub write, however many times it was admitted:
	// the edit is not refused as stale by its own first admission.
	records := func() int { return len(kafkatest.Committed(t, f.topics[events.TopicConfig])) }
	twice := interposeConflict(t, a.dyn, mirrorNS, as("admin"), ca)
	recordsAt := records()
	edit := []byte(`{"spec":{"info":[{"name":"owner","value":"alice"}]}}`)
	if _, err := alice.Patch(t.Context(), a.name, types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatalf("alice's spec edit, admitted twice: %v", err)
	}
	if n := twice(); n < 2 {
		t.Fatalf("the API server admitted the edit %d times, want it admitted again after the conflict", n)
	}
	if n := records() - recordsAt; n != 1 {
		t.Errorf("an edit admitted twice appended %d config records, want 1", n)
	}
	waitFor(t, 2*time.Minute, "alice's edit on the cluster's Application", func() bool {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		info, _, _ := unstructured.NestedSlice(got.Object, "spec", "info")
		return err == nil && len(info) == 1 && fmt.Sprint(info[0]) == "map[name:owner value:alice]"
	})

	// A sync admitted twice is one sync on the cluster.
	recordsAt = records()
	got, err := alice.Patch(t.Context(), a.name, types.MergePatchType, sync, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("alice's sync: %v", err)
	}
	if n := twice(); n < 2 {
		t.Fatalf("the API server admitted the sync %d times, want it admitted again after the conflict", n)
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
	if n := records() - recordsAt; n != 1 {
		t.Errorf("a sync admitted twice appended %d config records, want 1", n)
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

	// A mark the webhook did not sign, written past it (as the mirror's
	// own user can), would be an order to sync as alice: the relay asks
	// nothing for it, takes it off and says why on the object.
	recordsAt = records()
	forged, _ := json.Marshal(map[string]any{"id": "forged", "user": "alice", "groups": []string{"team-a"}, "at": time.Now().UTC(),
		"request": map[string]any{"operation": "sync"}})
	markIt, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{mirror.LabelRelay: "pending"},
		"annotations": map[string]any{mirror.AnnotationRelay: string(forged)}}})
	if _, err := as("admin").Patch(t.Context(), a.name, types.MergePatchType, markIt, metav1.PatchOptions{}); err != nil {
		t.Fatalf("write a mark past the webhook: %v", err)
	}
	waitRefusedCondition(t, as("admin"), a.name, "a sync or rollback marked on the Application was not asked: the mark is not signed")
	waitUnmarked(t, as("admin"), a.name, "the relay to take the forged mark off")
	if n := records() - recordsAt; n != 0 {
		t.Errorf("a forged mark appended %d config records, want none", n)
	}

	// Fifty syncs at once: each one the API server stores is one
	// operation asked of the hub; each refused (one still waits to be
	// relayed) appends nothing.
	recordsAt = records()
	admitted := burst(t, 50, func() error {
		_, err := alice.Patch(t.Context(), a.name, types.MergePatchType, sync, metav1.PatchOptions{})
		return err
	}, func(err error) bool { return strings.Contains(err.Error(), "still being relayed") })
	twice()
	waitUnmarked(t, as("admin"), a.name, "the burst's syncs to be relayed")
	if n := records() - recordsAt; admitted == 0 || n != admitted {
		t.Errorf("fifty syncs at once: %d admitted, %d config records; want one record for each admitted", admitted, n)
	}
	t.Logf("fifty syncs at once: %d admitted, %d config records", admitted, records()-recordsAt)

	if err := alice.Delete(t.Context(), a.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("alice's delete, admitted twice: %v", err)
	}
	if n := twice(); n < 2 {
		t.Fatalf("the API server admitted the delete %d times, want it admitted again after the conflict", n)
	}
	waitFor(t, 2*time.Minute, "the Application to leave the cluster", func() bool {
		_, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// waitUnmarked waits, as what, until the Application name holds no relay
// mark.
func waitUnmarked(t *testing.T, apps dynamic.ResourceInterface, name, what string) {
	t.Helper()
	waitFor(t, time.Minute, what, func() bool {
		got, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, marked := got.GetAnnotations()[mirror.AnnotationRelay]
		return !marked
	})
}

// webhookMirror is the real mirror with its admission webhook registered
// on a real apiserver, beside a real hub, broker, spoke and Argo CD, with
// one Application the spoke's Argo CD synced, mirrored into mirrorNS,
// whose Applications every authenticated user may change: the hub
// decides. The mirror's token grants team-a deployer and victor viewer.
type webhookMirror struct {
	e        *kubetest.Env
	f        *fixture
	a        liveApp
	mirrorNS string
	ca       *tlstest.CA
}

func startWebhookMirror(t testing.TB) *webhookMirror {
	t.Helper()
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
	registerWebhook(t, a.dyn, "argosy-mirror-"+mirrorNS, mirrorNS, fmt.Sprintf("https://127.0.0.1:%d/", ports[0]), ca.PEM)
	allowEditing(t, a.dyn, mirrorNS)
	return &webhookMirror{e: e, f: f, a: a, mirrorNS: mirrorNS, ca: ca}
}

// as is the mirror namespace's Applications as user of groups
// (impersonated, as kubectl --as would).
func (w *webhookMirror) as(t testing.TB, user string, groups ...string) dynamic.ResourceInterface {
	t.Helper()
	cfg := rest.CopyConfig(w.e.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(kubetest.ApplicationGVR).Namespace(w.mirrorNS)
}

// BenchmarkRelayedSync times a sync asked in the mirror cluster as kubectl
// would (a patch of the mirrored Application's operation, as alice), until
// the hub has taken it: the webhook's review and dry run, the API server's
// write, the relay's informer, its hub call (durable on the broker) and
// its unmark.
func BenchmarkRelayedSync(b *testing.B) {
	w := startWebhookMirror(b)
	alice, admin := w.as(b, "alice", "team-a"), w.as(b, "admin")
	sync := []byte(`{"operation":{"sync":{"revision":"main"},"initiatedBy":{"username":"alice"}}}`)
	for b.Loop() {
		if _, err := alice.Patch(b.Context(), w.a.name, types.MergePatchType, sync, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			got, err := admin.Get(b.Context(), w.a.name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, marked := got.GetAnnotations()[mirror.AnnotationRelay]; !marked {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// burst calls do n times at once and returns how many calls succeeded;
// a call that fails other than as refused says is the test's failure.
func burst(t *testing.T, n int, do func() error, refused func(error) bool) int {
	t.Helper()
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for range n {
		wg.Go(func() {
			err := do()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !refused(err):
				t.Errorf("a call of the burst: %v", err)
			}
		})
	}
	wg.Wait()
	return ok
}

// allowEditing lets every authenticated user read, change and delete the
// Applications of namespace ns: what Kubernetes allows; the hub decides.
func allowEditing(t testing.TB, dyn dynamic.Interface, ns string) {
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

// registerWebhook registers the admission webhook at url, as
// configuration name, for the Applications of namespace ns alone, as the
// chart does the mirror's for every mirror namespace, and removes it when
// the test ends.
func registerWebhook(t testing.TB, dyn dynamic.Interface, name, ns, url string, caPEM []byte) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
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

// interposeConflict registers, beside the mirror's webhook on the
// Applications of namespace ns, one that makes the API server admit each
// change of anyone but admin twice: at its first review it writes the
// object as admin, so that the API server's write of the change
// conflicts, and the API server reads the object again and runs
// admission again. It returns a func that says how many reviews the
// change since the last call had, and readies it for the next change.
func interposeConflict(t *testing.T, dyn dynamic.Interface, ns string, apps dynamic.ResourceInterface, ca *tlstest.CA) func() int {
	t.Helper()
	var (
		mu   sync.Mutex
		seen int
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not a review", http.StatusBadRequest)
			return
		}
		req := review.Request
		if req.UserInfo.Username != "admin" && (req.Operation == admissionv1.Update || req.Operation == admissionv1.Delete) {
			mu.Lock()
			seen++
			first := seen == 1
			mu.Unlock()
			if first {
				touch := []byte(`{"metadata":{"annotations":{"test.argosy.dev/touched":"` + string(req.UID) + `"}}}`)
				if _, err := apps.Patch(r.Context(), req.Name, types.MergePatchType, touch, metav1.PatchOptions{}); err != nil {
					t.Errorf("write the object during its admission: %v", err)
				}
			}
		}
		review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	certPEM, keyPEM := ca.Issue(t, "interposer")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	registerWebhook(t, dyn, "a-conflict-"+ns, ns, srv.URL+"/", ca.PEM)
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		n := seen
		seen = 0
		return n
	}
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
