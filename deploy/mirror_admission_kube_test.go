//go:build integration

package deploy_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/mirror"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// mirrorDenial is what the chart's mirror policy says when it refuses a
// change to a mirrored Application.
const mirrorDenial = "through Argosy (argosy app apply|sync|rollback|delete --cluster), not here"

// oneApp is a fleet of one cluster running one Application, in the state
// *state (Connected when empty), or of no cluster when *state is "none".
type oneApp struct {
	cluster string
	state   *string
}

func (f oneApp) Clusters(context.Context) ([]read.Cluster, error) {
	switch *f.state {
	case "none":
		return nil, nil
	case "":
		return []read.Cluster{{ClusterRow: projector.ClusterRow{Name: f.cluster}, State: read.StateConnected}}, nil
	}
	return []read.Cluster{{ClusterRow: projector.ClusterRow{Name: f.cluster}, State: *f.state}}, nil
}

func (f oneApp) Apps(context.Context, projector.AppFilter) ([]read.App, error) {
	key := projector.AppKey{Cluster: f.cluster, Namespace: "argocd", Name: "web"}
	return []read.App{{AppRow: projector.AppRow{AppKey: key, Desired: &projector.AppDesired{AppKey: key, Project: "default", Generation: 1,
		Spec: json.RawMessage(`{"source":{"repoURL":"https://git.example/app","path":"app"},"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`)}}}}, nil
}

func (oneApp) Deployments(context.Context, projector.DeploymentFilter) (*read.DeploymentList, error) {
	return &read.DeploymentList{}, nil
}

// operations records the operations a Relay asks for.
type operations struct {
	mu    sync.Mutex
	asked []string
}

func (o *operations) Apply(context.Context, string, api.ApplyRequest, api.WriteOptions) (*api.Result, error) {
	return nil, errors.New("the relay applies nothing")
}

func (o *operations) Delete(context.Context, string, string, string, string, bool, api.WriteOptions) (*api.Result, error) {
	return nil, errors.New("the relay deletes nothing")
}

func (o *operations) Operate(_ context.Context, cluster, namespace, name string, req api.OperationRequest, wo api.WriteOptions) (*api.Result, error) {
	if wo.DryRun { // the webhook's: would the hub take it
		return &api.Result{DryRun: true}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked = append(o.asked, cluster+" "+namespace+"/"+name+" "+req.Operation)
	return &api.Result{}, nil
}

// relayAsTheMirror runs the mirror's relay as the ServiceAccount kube
// configures, on the Application web of cluster, in namespace ns, marked
// with a sync:
// the ClusterRole lets it watch the marked Applications and take the mark
// off.
func relayAsTheMirror(t *testing.T, kube *rest.Config, cluster, ns string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	// The relay's informer lists, then watches, the marked Applications
	// of every namespace.
	w, err := dyn.Resource(kubetest.ApplicationGVR).Watch(t.Context(), metav1.ListOptions{LabelSelector: mirror.LabelRelay + "=pending"})
	if err != nil {
		t.Fatalf("watch the marked Applications as the mirror: %v", err)
	}
	w.Stop()
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(ns)
	// The mark the webhook signs for alice's sync, written as the mirror.
	key, err := mirror.NewMarkKey([]byte("the mirror's token"))
	if err != nil {
		t.Fatal(err)
	}
	ops := &operations{}
	prefix := strings.TrimSuffix(ns, cluster)
	adm, err := mirror.NewAdmission(ops, "me", prefix, mirror.WithAdmissionMarkKey(key))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(cur.Object)
	cur.Object["operation"] = map[string]any{"sync": map[string]any{}}
	after, _ := json.Marshal(cur.Object)
	resp := adm.Review(t.Context(), &admissionv1.AdmissionRequest{UID: "u1", Name: "web", Namespace: ns, Operation: admissionv1.Update,
		Kind:     metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
		UserInfo: authnv1.UserInfo{Username: "alice"}, OldObject: runtime.RawExtension{Raw: before}, Object: runtime.RawExtension{Raw: after}})
	var review []struct {
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := json.Unmarshal(resp.Patch, &review); !resp.Allowed || err != nil {
		t.Fatalf("the webhook's review of alice's sync: %+v %v", resp.Result, err)
	}
	var mark any
	for _, op := range review {
		if op.Path == "/metadata/annotations/argosy.dev~1relay" {
			mark = op.Value
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{mirror.LabelRelay: "pending"},
		"annotations": map[string]any{mirror.AnnotationRelay: mark}}})
	if _, err := apps.Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("mark a sync as the mirror: %v", err)
	}
	relay, err := mirror.NewRelay(ops, kube, prefix, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the relay: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ops.mu.Lock()
		asked := slices.Clone(ops.asked)
		ops.mu.Unlock()
		if _, marked := got.GetLabels()[mirror.LabelRelay]; !marked {
			if want := cluster + " argocd/web sync"; len(asked) != 1 || asked[0] != want {
				t.Errorf("the relay asked %q, want %q", asked, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after a sync was marked, the relay running as the mirror's ServiceAccount has not taken the mark off (asked %q)", asked)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMirrorRoleAndReadOnlyPolicy installs the chart's mirror part for
// real on a real kube-apiserver with Argo CD's CRDs, and runs a round of
// the mirror as its ServiceAccount: the ClusterRole grants what it needs
// (its namespaces, the Applications in them). The chart's policy then
// refuses anyone else's change to a mirrored Application (an edit, an
// operation, a delete, a new Application in the namespace), naming the
// argosy command to use. Deleting the namespace still works, and the
// mirror makes it again.
func TestMirrorRoleAndReadOnlyPolicy(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	ns := e.Namespace(t)
	objs := render(t, ns, "-f", chart+"/ci/mirror-values.yaml", "--set", "mirror.namespacePrefix=mirror-")
	if err := e.ApplyObjects(ctx, ns, objs...); err != nil {
		t.Fatal(err)
	}
	deleteClusterScoped(t, e, objs)
	cluster := "c-" + ns
	var state string
	m, err := mirror.New(oneApp{cluster, &state}, e.TokenConfig(t, ns, "argosy-mirror"), mirror.WithNamespacePrefix("mirror-"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := m.Round(ctx); err != nil || st.Written != 1 {
		t.Fatalf("a round as the mirror's ServiceAccount: %+v, %v; want one Application written", st, err)
	}
	admin, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	mirrorNS := "mirror-" + cluster
	apps := admin.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	t.Cleanup(func() {
		_ = admin.Resource(namespacesGVR).Delete(context.Background(), mirrorNS, metav1.DeleteOptions{})
	})
	sync := []byte(`{"operation":{"sync":{"revision":"main"}}}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := apps.Patch(ctx, "web", types.MergePatchType, sync, metav1.PatchOptions{})
		if err != nil && strings.Contains(err.Error(), mirrorDenial) {
			if !strings.Contains(err.Error(), "mirror those of Argosy cluster "+cluster) {
				t.Errorf("the refusal does not name the cluster: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the chart was installed, an administrator's Sync of a mirrored Application is not refused: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for what, call := range map[string]func() error{
		"edit the spec": func() error {
			_, err := apps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"source":{"path":"other"}}}`), metav1.PatchOptions{})
			return err
		},
		"delete it": func() error { return apps.Delete(ctx, "web", metav1.DeleteOptions{}) },
		"create another": func() error {
			_, err := apps.Create(ctx, mirrorApp(mirrorNS, "other"), metav1.CreateOptions{})
			return err
		},
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), mirrorDenial) {
			t.Errorf("%s as an administrator: %v, want refused by the policy", what, err)
		}
	}
	if st, err := m.Round(ctx); err != nil || st.Unchanged != 1 {
		t.Errorf("a second round: %+v, %v; want the Application unchanged", st, err)
	}
	relayAsTheMirror(t, e.TokenConfig(t, ns, "argosy-mirror"), cluster, mirrorNS)

	if err := admin.Resource(namespacesGVR).Delete(ctx, mirrorNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		_, err := admin.Resource(namespacesGVR).Get(ctx, mirrorNS, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror namespace is not gone a minute after its delete (the policy must let the namespace controller empty it): %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if st, err := m.Round(ctx); err != nil || st.Written != 1 {
		t.Errorf("a round after the namespace was deleted: %+v, %v; want the Application written again", st, err)
	}

	// A view that shows no cluster at all (one being rebuilt) empties
	// nothing; a deregistered cluster's namespace goes.
	state = "none"
	if _, err := m.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if kept, err := admin.Resource(namespacesGVR).Get(ctx, mirrorNS, metav1.GetOptions{}); err != nil || kept.GetDeletionTimestamp() != nil {
		t.Errorf("after a round over a fleet of no cluster, the namespace is being deleted or gone (%v); want it kept", err)
	}
	state = read.StateDeregistered
	if _, err := m.Round(ctx); err != nil {
		t.Fatal(err)
	}
	gone, err := admin.Resource(namespacesGVR).Get(ctx, mirrorNS, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) && (err != nil || gone.GetDeletionTimestamp() == nil) {
		t.Errorf("after its cluster was deregistered, the namespace is still there (%v)", err)
	}
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// mirrorApp is an Application named name in namespace ns.
func mirrorApp(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://git.example/app"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc"}},
	}}
}

// fleetOf is a fleet of Connected clusters, each running the Application
// argocd/web.
type fleetOf []string

func (f fleetOf) Clusters(context.Context) ([]read.Cluster, error) {
	var out []read.Cluster
	for _, c := range f {
		out = append(out, read.Cluster{ClusterRow: projector.ClusterRow{Name: c}, State: read.StateConnected})
	}
	return out, nil
}

func (f fleetOf) Apps(ctx context.Context, filter projector.AppFilter) ([]read.App, error) {
	return oneApp{cluster: filter.Cluster}.Apps(ctx, filter)
}

func (fleetOf) Deployments(context.Context, projector.DeploymentFilter) (*read.DeploymentList, error) {
	return &read.DeploymentList{}, nil
}

// TestMirrorLeavesWhatIsNotItsOwn: a namespace named as a cluster's
// mirror namespace that the mirror did not make is never written to, and
// each round says so with ErrForeignNamespace, while the other clusters
// are mirrored (an error no retry can fix stops nothing else); an
// Application without the mirror's label in the mirror's own namespace
// is never deleted.
func TestMirrorLeavesWhatIsNotItsOwn(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	suffix := e.Namespace(t)
	own, taken := "own-"+suffix, "taken-"+suffix
	admin, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "mirror-" + taken}}}
	if _, err := admin.Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"mirror-" + taken, "mirror-" + own} {
			_ = admin.Resource(namespacesGVR).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	waitNoMirrorPolicy(t, admin, "mirror-"+taken)
	m, err := mirror.New(fleetOf{own, taken}, e.Admin, mirror.WithNamespacePrefix("mirror-"))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		st, err := m.Round(ctx)
		if !errors.Is(err, mirror.ErrForeignNamespace) || !strings.Contains(err.Error(), "mirror-"+taken) {
			t.Errorf("round %d: %v, want ErrForeignNamespace naming mirror-%s", round, err, taken)
		}
		if want := map[bool]int{true: 1, false: 0}[round == 0]; st.Written != want {
			t.Errorf("round %d wrote %d Applications, want %d (own's, once)", round, st.Written, want)
		}
		if round == 0 {
			if _, err := admin.Resource(kubetest.ApplicationGVR).Namespace("mirror-"+own).Create(ctx, mirrorApp("mirror-"+own, "bystander"),
				metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l, err := admin.Resource(kubetest.ApplicationGVR).Namespace("mirror-"+taken).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("the namespace the mirror did not make holds %v (%v); want nothing written", l, err)
	}
	if got, err := admin.Resource(namespacesGVR).Get(ctx, "mirror-"+taken, metav1.GetOptions{}); err != nil || len(got.GetLabels()) > 1 {
		t.Errorf("the namespace the mirror did not make: labels %v (%v), want its own alone", got.GetLabels(), err)
	}
	if _, err := admin.Resource(kubetest.ApplicationGVR).Namespace("mirror-"+own).Get(ctx, "bystander", metav1.GetOptions{}); err != nil {
		t.Errorf("an Application without the mirror's label, in its namespace: %v; want it left", err)
	}
}

// waitNoMirrorPolicy waits until no mirror's admission policy, such as one
// another test installed and deleted a moment ago, refuses an
// administrator's Application in a namespace labelled as the mirror's: a
// deleted policy stops applying once the apiserver's informer has seen it
// go. It asks with dry runs in namespace ns, labelling it for the time.
func waitNoMirrorPolicy(t *testing.T, admin dynamic.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	label := func(v any) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{mirror.LabelManagedBy: v}}})
		if _, err := admin.Resource(namespacesGVR).Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label(mirror.FieldManager)
	defer label(nil)
	// The policies themselves first: a probe alone can pass while the
	// API server's admission has not yet seen the namespace's new label.
	policies := []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}}
	deadline := time.Now().Add(30 * time.Second)
	for passed := 0; passed < 5; {
		left := 0
		for _, gvr := range policies {
			l, err := admin.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range l.Items {
				if strings.HasPrefix(p.GetName(), "argosy-mirror.") {
					left++
				}
			}
		}
		_, err := admin.Resource(kubetest.ApplicationGVR).Namespace(ns).Create(ctx, mirrorApp(ns, "probe"),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case left == 0 && err == nil:
			passed++ // and again, for the admission's caches to agree
		case time.Now().After(deadline):
			t.Fatalf("a mirror's admission policy still applies 30 s on: %d left, %v", left, err)
		default:
			passed = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMirrorAdmissionChart installs the chart's mirror with its admission
// webhook for real. The certificate the chart made serves TLS that a
// client trusting the webhook's caBundle accepts for the webhook
// Service's name. No read-only policy is installed: the webhook takes its
// place. The mirror's own writes are not sent to the webhook: a round as
// its ServiceAccount writes while no webhook answers. Anyone else's change
// is sent to it: with no mirror behind the Service, the API server refuses
// it, since a change that cannot be relayed must not land.
func TestMirrorAdmissionChart(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	ns := e.Namespace(t)
	cluster := "a-" + ns
	mirrorNS := "mirror-" + cluster
	objs := render(t, ns, "-f", chart+"/ci/mirror-admission-values.yaml", "--set", "mirror.namespacePrefix=mirror-")
	var secret, hook *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Secret":
			secret = o
		case "MutatingWebhookConfiguration":
			hook = o
		case "ValidatingAdmissionPolicy":
			t.Errorf("the read-only policy %s is installed beside the webhook, and would refuse what the webhook relays", o.GetName())
		}
	}
	if secret == nil || hook == nil {
		t.Fatalf("rendered no webhook Secret (%v) or configuration (%v)", secret != nil, hook != nil)
	}
	webhooks, _, _ := unstructured.NestedSlice(hook.Object, "webhooks")
	wh := webhooks[0].(map[string]any)
	caBundle, _ := base64.StdEncoding.DecodeString(wh["clientConfig"].(map[string]any)["caBundle"].(string))
	data := func(k string) []byte {
		v, _, _ := unstructured.NestedString(secret.Object, "data", k)
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pair, err := tls.X509KeyPair(data("tls.crt"), data("tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) || !bytes.Equal(caBundle, data("ca.crt")) {
		t.Fatalf("the webhook's caBundle is not the Secret's CA:\n%s", caBundle)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "argosy-mirror-admission." + ns + ".svc"}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("TLS with the chart's certificate, as the API server dials the webhook's Service: %v", err)
	}
	resp.Body.Close()

	// Only this test's mirror namespace, so that no other test's mirror
	// namespace sends its changes to a webhook that is not there.
	wh["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/managed-by": "argosy-mirror",
		"kubernetes.io/metadata.name": mirrorNS}}
	if err := unstructured.SetNestedSlice(hook.Object, webhooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
	if err := e.ApplyObjects(ctx, ns, objs...); err != nil {
		t.Fatal(err)
	}
	deleteClusterScoped(t, e, objs)
	admin, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Resource(namespacesGVR).Delete(context.Background(), mirrorNS, metav1.DeleteOptions{})
	})
	var state string
	m, err := mirror.New(oneApp{cluster, &state}, e.TokenConfig(t, ns, "argosy-mirror"), mirror.WithNamespacePrefix("mirror-"))
	if err != nil {
		t.Fatal(err)
	}
	// The API server's admission follows policies through informers: the
	// read-only policy of a test before this one may still hold a moment
	// after its deletion.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := m.Round(ctx)
		if err == nil && st.Written == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a round as the mirror's ServiceAccount: %+v, %v; want one Application written, without the webhook", st, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	apps := admin.Resource(kubetest.ApplicationGVR).Namespace(mirrorNS)
	deadline = time.Now().Add(30 * time.Second) // the configuration, too, is followed through an informer
	for {
		_, err = apps.Patch(ctx, "web", types.MergePatchType, []byte(`{"operation":{"sync":{}}}`), metav1.PatchOptions{})
		if err != nil && strings.Contains(err.Error(), "applications.mirror.argosy.dev") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an administrator's sync with no webhook behind the Service: %v, want refused by the webhook's failure", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
