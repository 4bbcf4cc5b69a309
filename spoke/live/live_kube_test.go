//go:build integration

package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/spoke/live"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// countingLogs is the real log reader, counting its calls.
type countingLogs struct {
	r     live.LogReader
	mu    sync.Mutex
	calls int
}

func (c *countingLogs) PodLogs(ctx context.Context, ns, pod string, opts live.LogOptions) (io.ReadCloser, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.r.PodLogs(ctx, ns, pod, opts)
}

const manifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata:
  name: web
stringData: {password: hunter2}
`

// syncedApp makes an Application of the manifests above in a namespace of
// its own, waits until Argo CD's controller has synced all four, then adds
// what a kube-controller-manager would: a ReplicaSet of the Deployment
// and a Pod of the ReplicaSet. It returns the Application's name, the
// namespace and the Application as last read.
func syncedApp(t *testing.T, dyn dynamic.Interface) (string, string, *unstructured.Unstructured) {
	t.Helper()
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	repo := kubetest.NewRepo(t)
	repo.Commit(t, "v1", map[string]string{"app/all.yaml": manifests})
	apps := dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	name := "live-" + ns
	app := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": repo.URL, "path": "app", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"syncPolicy":  map[string]any{"automated": map[string]any{}}}}}
	if _, err := apps.Create(t.Context(), app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := apps.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete application %s: %v", name, err)
		}
	})
	a := kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
		res, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
		synced := 0
		for _, r := range res {
			if r.(map[string]any)["status"] == "Synced" {
				synced++
			}
		}
		return synced == 4
	})
	dep, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns).
		Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := create(t, dyn, ns, obj("apps/v1", "ReplicaSet", ns, "web-5d9", "", dep, map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}}}))
	// Its Pod is bound to a Node whose kubelet answers its container's
	// log (no container runs here).
	node := kubetest.Current(t).StartKubelet(t, func(namespace, pod, container string) []kubetest.LogLine {
		if namespace != ns || pod != "web-5d9-x1" || container != "web" {
			return nil
		}
		return webLog
	})
	create(t, dyn, ns, obj("v1", "Pod", ns, "web-5d9-x1", "", rs, map[string]any{"spec": map[string]any{
		"nodeName": node, "containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}))
	return name, ns, a
}

// webLog is the log of the container web of the Pod web-5d9-x1.
var webLog = []kubetest.LogLine{
	{Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Text: "started"},
	{Time: time.Date(2026, 11, 27, 10, 0, 1, 2, time.UTC), Text: "GET /"},
	{Time: time.Date(2026, 11, 27, 10, 0, 2, 500_000_000, time.UTC), Text: "GET /health"},
}

// create creates o in ns and returns it as the API server stored it.
func create(t *testing.T, dyn dynamic.Interface, ns string, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	meta := o.Object["metadata"].(map[string]any)
	delete(meta, "uid")
	delete(meta, "resourceVersion")
	delete(meta, "creationTimestamp")
	delete(meta, "managedFields")
	gvr := schema.GroupVersionResource{Group: o.GroupVersionKind().Group, Version: o.GroupVersionKind().Version,
		Resource: strings.ToLower(o.GetKind()) + "s"}
	got, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), o, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLiveOnArgoCD asks about an Application that Argo CD's controller
// synced for real: its tree holds every managed resource with the health
// Argo CD gave it and the ReplicaSet and Pod with their parents; a
// Secret's manifest is masked; nothing outside the tree can be read; an
// unknown Application is not found; the node bound holds; the log
// endpoint is reached for a Pod of the tree and never for another.
func TestLiveOnArgoCD(t *testing.T) {
	e := kubetest.Current(t)
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	name, ns, app := syncedApp(t, dyn)
	podLogs, err := live.NewPodLogs(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	logs := &countingLogs{r: podLogs}
	s, err := live.New(dyn, logs, kubetest.ArgoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := s.Tree(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	checkTree(t, ns, app, tree)
	checkManifests(t, s, dyn, name, ns)

	if _, err := s.Tree(t.Context(), "no-such-app"); !errors.Is(err, live.ErrAppNotFound) {
		t.Errorf("tree of an unknown application: %v; want ErrAppNotFound", err)
	}
	small, err := live.New(dyn, logs, kubetest.ArgoNamespace, live.WithMaxNodes(len(tree.Nodes)-1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Tree(t.Context(), name); !errors.Is(err, live.ErrTooLarge) {
		t.Errorf("tree of %d nodes bounded at %d: %v; want ErrTooLarge", len(tree.Nodes), len(tree.Nodes)-1, err)
	}
	checkLogs(t, s, logs, dyn, name, ns)
	checkDiff(t, s, dyn, name, ns)
}

// checkDiff holds the diff question to what Argo CD really applied: as
// synced, nothing is modified, whatever the API server defaulted; a
// ConfigMap and a Secret changed by hand are, the Secret without its
// values; a deleted Service is, and is "null".
func checkDiff(t *testing.T, s *live.Source, dyn dynamic.Interface, name, ns string) {
	t.Helper()
	items := func() map[string]live.ResourceDiff {
		d, err := s.Diff(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("aHVudGVyMg")) || bytes.Contains(b, []byte("c3dvcmRmaXNo")) {
			t.Errorf("the diff shows a Secret's value: %s", b)
		}
		out := map[string]live.ResourceDiff{}
		for _, it := range d.Items {
			out[it.Kind] = it
		}
		return out
	}
	synced := items()
	if len(synced) != 4 {
		t.Fatalf("diff of %d kinds %v; want the 4 managed resources", len(synced), synced)
	}
	for kind, it := range synced {
		if it.Modified || it.TargetState == "" || it.SyncStatus != "Synced" {
			t.Errorf("%s as synced: modified %v, sync %q, target %s, live %s; want unmodified with its target", kind, it.Modified,
				it.SyncStatus, it.TargetState, it.NormalizedLiveState)
		}
	}
	if dep := synced["Deployment"]; strings.Contains(dep.NormalizedLiveState, "terminationMessagePath") {
		t.Errorf("the Deployment's normalized live state holds a field it was not applied with: %s", dep.NormalizedLiveState)
	}
	patch := func(resource, body string) {
		gvr := schema.GroupVersionResource{Version: "v1", Resource: resource}
		if _, err := dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch("configmaps", `{"data":{"greeting":"changed by hand"}}`)
	patch("secrets", `{"data":{"password":"c3dvcmRmaXNo"}}`)
	if err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns).
		Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drifted := items()
	if cm := drifted["ConfigMap"]; !cm.Modified || !strings.Contains(cm.NormalizedLiveState, "changed by hand") || !strings.Contains(cm.TargetState, "hello") {
		t.Errorf("the ConfigMap changed by hand: %+v; want modified, both values shown", cm)
	}
	sec := drifted["Secret"]
	if !sec.Modified || !strings.Contains(sec.TargetState, `"password":"`+live.SecretMask+`"`) ||
		!strings.Contains(sec.NormalizedLiveState, `"password":"`+live.SecretMask+`+"`) {
		t.Errorf("the Secret changed by hand: %+v; want modified, with masks of two lengths", sec)
	}
	if svc := drifted["Service"]; !svc.Modified || svc.NormalizedLiveState != "null" {
		t.Errorf("the deleted Service: %+v; want modified and null", svc)
	}
	if dep := drifted["Deployment"]; dep.Modified {
		t.Errorf("the Deployment no one touched is modified: %+v", dep)
	}
}

func checkTree(t *testing.T, ns string, app *unstructured.Unstructured, tree *live.Tree) {
	t.Helper()
	type key struct{ group, kind, name string }
	byKey := map[key]live.Node{}
	for _, n := range tree.Nodes {
		byKey[key{n.Group, n.Kind, n.Name}] = n
	}
	res, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	for _, r := range res {
		m := r.(map[string]any)
		group, _ := m["group"].(string)
		n, ok := byKey[key{group, m["kind"].(string), m["name"].(string)}]
		if !ok {
			t.Errorf("the tree lacks managed resource %v", m)
			continue
		}
		var want *live.Health
		if h, ok := m["health"].(map[string]any); ok {
			msg, _ := h["message"].(string)
			want = &live.Health{Status: h["status"].(string), Message: msg}
		}
		if diff := cmp.Diff(want, n.Health); diff != "" || n.UID == "" || n.Namespace != ns {
			t.Errorf("node %s: health (-status +tree):\n%s uid %q", n.TreeRef, diff, n.UID)
		}
	}
	dep, rs, pod := byKey[key{"apps", "Deployment", "web"}], byKey[key{"apps", "ReplicaSet", "web-5d9"}], byKey[key{"", "Pod", "web-5d9-x1"}]
	wantParents := map[string][]live.Ref{
		"ReplicaSet": {{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web", UID: dep.UID}},
		"Pod":        {{Group: "apps", Kind: "ReplicaSet", Namespace: ns, Name: "web-5d9", UID: rs.UID}},
	}
	for _, n := range []live.Node{rs, pod} {
		if diff := cmp.Diff(wantParents[n.Kind], n.ParentRefs); diff != "" || n.UID == "" {
			t.Errorf("%s %q: parents (-want +got):\n%s", n.Kind, n.Name, diff)
		}
	}
	if !cmp.Equal(pod.Images, []string{"nginx:1.27"}) || len(pod.Info) == 0 {
		t.Errorf("pod images %v, info %v", pod.Images, pod.Info)
	}
	if len(res) != 4 || len(tree.Nodes) != 6 {
		t.Errorf("tree of %d nodes, %d managed: %+v", len(tree.Nodes), len(res), tree.Nodes)
	}
}

func checkManifests(t *testing.T, s *live.Source, dyn dynamic.Interface, name, ns string) {
	t.Helper()
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	stored, err := dyn.Resource(secrets).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Errorf("Argo CD applied the secret without a last-applied annotation: the check below proves nothing of it")
	}
	raw, err := s.Manifest(t.Context(), name, live.Ref{Kind: "Secret", Namespace: ns, Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var sec map[string]any
	if err := json.Unmarshal(raw, &sec); err != nil {
		t.Fatal(err)
	}
	if d, _ := sec["data"].(map[string]any); len(d) != 1 || d["password"] != live.SecretMask {
		t.Errorf("secret data %v; want password masked", sec["data"])
	}
	if bytes.Contains(raw, []byte("aHVudGVyMg")) || bytes.Contains(raw, []byte("hunter2")) ||
		bytes.Contains(raw, []byte("managedFields")) || bytes.Contains(raw, []byte("last-applied-configuration")) {
		t.Errorf("secret manifest shows a value, managed fields or the last applied configuration: %s", raw)
	}
	if raw, err := s.Manifest(t.Context(), name, live.Ref{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}); err != nil ||
		!bytes.Contains(raw, []byte(`"nginx:1.27"`)) || bytes.Contains(raw, []byte("managedFields")) {
		t.Errorf("deployment manifest %s, %v", raw, err)
	}
	for _, o := range []*unstructured.Unstructured{obj("v1", "Secret", kubetest.ArgoNamespace, "live-"+ns, "", nil, nil),
		obj("v1", "Secret", ns, "other", "", nil, nil)} {
		o.Object["stringData"] = map[string]any{"token": "not-yours"}
		create(t, dyn, o.GetNamespace(), o)
		t.Cleanup(func() {
			if err := dyn.Resource(secrets).Namespace(o.GetNamespace()).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Logf("delete secret: %v", err)
			}
		})
		ref := live.Ref{Kind: "Secret", Namespace: o.GetNamespace(), Name: o.GetName()}
		if raw, err := s.Manifest(t.Context(), name, ref); !errors.Is(err, live.ErrNotInApp) {
			t.Errorf("manifest of %s outside the tree: %s, %v; want ErrNotInApp", ref, raw, err)
		}
	}
}

func checkLogs(t *testing.T, s *live.Source, logs *countingLogs, dyn dynamic.Interface, name, ns string) {
	t.Helper()
	create(t, dyn, ns, obj("v1", "Pod", ns, "outsider", "", nil, map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}))
	if _, err := s.Logs(t.Context(), name, live.Ref{Kind: "Pod", Namespace: ns, Name: "outsider"}, live.LogOptions{}); !errors.Is(err, live.ErrNotInApp) {
		t.Errorf("logs of a pod outside the tree: %v; want ErrNotInApp", err)
	}
	if logs.calls != 0 {
		t.Errorf("a refused question called the log endpoint %d times", logs.calls)
	}
	// The API server reads the log from the Pod's Node's kubelet.
	got, err := s.Logs(t.Context(), name, live.Ref{Kind: "Pod", Namespace: ns, Name: "web-5d9-x1"}, live.LogOptions{Container: "web", TailLines: 2, Timestamps: true})
	if want := []string{"2026-11-27T10:00:01.000000002Z GET /", "2026-11-27T10:00:02.5Z GET /health"}; err != nil || !slices.Equal(got.Lines, want) ||
		got.Pod.Name != "web-5d9-x1" {
		t.Errorf("logs of the tree's pod: %+v, %v; want its last 2 lines with their times, %q", got, err, want)
	}
	if got, err := s.Logs(t.Context(), name, live.Ref{Kind: "Pod", Namespace: ns, Name: "web-5d9-x1"}, live.LogOptions{}); err != nil ||
		!slices.Equal(got.Lines, []string{"started", "GET /", "GET /health"}) {
		t.Errorf("logs of the tree's pod, without times: %+v, %v", got, err)
	}
	if logs.calls != 2 {
		t.Errorf("logs of the tree's pod called the log endpoint %d times; want twice", logs.calls)
	}
	// The endpoint checks the container against the Pod it reached.
	_, err = s.Logs(t.Context(), name, live.Ref{Kind: "Pod", Namespace: ns, Name: "web-5d9-x1"}, live.LogOptions{Container: "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("logs of a container the pod lacks: %v; want the API server's refusal", err)
	}
}
