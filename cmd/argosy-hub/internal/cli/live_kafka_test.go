//go:build integration

package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke/live"
)

// TestLiveQuestionsEndToEnd asks a real spoke, through the real hub and
// broker, about an Application its real Argo CD synced: the tree names
// every resource Argo CD manages, a Secret's manifest comes back masked,
// the diff shows nothing as synced and a ConfigMap edited on the cluster,
// an object outside the Application is refused without being read, and
// the calls are audited with their actor. A cluster whose agent does not
// run answers nothing: the call ends after its timeout and names the
// cluster's state.
func TestLiveQuestionsEndToEnd(t *testing.T) {
	e := kubetest.Current(t)
	if err := e.StartArgoCD(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, buildHub(t))
	a := syncedApp(t, e, f, "live-", map[string]string{
		"app/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n",
		"app/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: demo\nstringData:\n  password: hunter2\n",
		"web/deploy.yaml": deploymentYAML,
	})
	hubc, url, cluster, name, ns := a.hub, a.url, a.cluster, a.name, a.ns

	// A Deployment's Pod's log, read by the spoke from the API server,
	// which reads it from the Pod's Node's kubelet.
	webApp, pod := deploymentApp(t, e, a)
	var logs live.Logs
	waitFor(t, time.Minute, "the spoke's tree of the Deployment shows its Pod", func() bool {
		answer, err := hubc.Logs(t.Context(), cluster, kubetest.ArgoNamespace, webApp, ns, pod, api.LogOptions{Container: "web", TailLines: 2, Timestamps: true}, 0)
		return err == nil && json.Unmarshal(answer.Answer, &logs) == nil
	})
	if want := []string{"2026-11-27T10:00:01.000000002Z GET /", "2026-11-27T10:00:02.5Z GET /health"}; !slices.Equal(logs.Lines, want) {
		t.Errorf("the Pod's log through the hub: %+v, want %q", logs, want)
	}

	var tree live.Tree
	answer, err := hubc.Tree(t.Context(), cluster, kubetest.ArgoNamespace, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(answer.Answer, &tree); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range tree.Nodes {
		kinds = append(kinds, n.Kind+"/"+n.Name)
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap/demo", "Secret/demo"}; !slices.Equal(kinds, want) {
		t.Errorf("tree nodes %v, want %v", kinds, want)
	}

	secret, err := hubc.Manifest(t.Context(), cluster, kubetest.ArgoNamespace, name,
		api.LiveTarget{Version: "v1", Kind: "Secret", Namespace: ns, Name: "demo"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(secret.Answer); strings.Contains(s, "aHVudGVyMg==") || strings.Contains(s, "hunter2") || !strings.Contains(s, live.SecretMask) {
		t.Errorf("the Secret's manifest is not masked: %s", s)
	}
	_, err = hubc.Manifest(t.Context(), cluster, kubetest.ArgoNamespace, name,
		api.LiveTarget{Version: "v1", Kind: "Secret", Namespace: kubetest.ArgoNamespace, Name: "argocd-secret"}, 0)
	if api.StatusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "not_in_tree") {
		t.Errorf("manifest of argocd-secret: %v, want 403 not_in_tree", err)
	}
	_, err = hubc.Logs(t.Context(), cluster, kubetest.ArgoNamespace, name, kubetest.ArgoNamespace, "argocd-server", api.LogOptions{}, 0)
	if api.StatusOf(err) != http.StatusForbidden {
		t.Errorf("logs of a Pod outside the Application: %v, want 403", err)
	}

	// The diff through the hub: as synced, nothing differs; a ConfigMap
	// edited on the cluster does, and the Secret shows no value.
	diff := func() map[string]schemas.ResourceDiff {
		t.Helper()
		answer, err := hubc.Diff(t.Context(), cluster, kubetest.ArgoNamespace, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(answer.Answer); strings.Contains(s, "hunter2") || strings.Contains(s, "aHVudGVyMg==") {
			t.Errorf("the diff shows the Secret's value: %s", s)
		}
		var d schemas.ApplicationDiff
		if err := json.Unmarshal(answer.Answer, &d); err != nil {
			t.Fatal(err)
		}
		out := map[string]schemas.ResourceDiff{}
		for _, it := range d.Items {
			out[it.Kind+"/"+it.Name] = it
		}
		return out
	}
	if d := diff(); len(d) != 2 || d["ConfigMap/demo"].Modified || d["Secret/demo"].Modified || d["ConfigMap/demo"].TargetState == "" {
		t.Errorf("diff as synced: %+v, want the ConfigMap and the Secret, unmodified", d)
	}
	if _, err := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Patch(t.Context(), "demo",
		types.MergePatchType, []byte(`{"data":{"v":"edited on the cluster"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm := diff()["ConfigMap/demo"]; !cm.Modified || !strings.Contains(cm.NormalizedLiveState, "edited on the cluster") {
		t.Errorf("diff of the edited ConfigMap: %+v, want modified", cm)
	}

	// A cluster registered, with no agent running: no answer.
	if _, err := hubc.RegisterCluster(t.Context(), "silent-"+ns, api.ClusterRequest{}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hubc.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"silent-" + ns}, Manifest: a.manifest},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = hubc.Tree(t.Context(), "silent-"+ns, kubetest.ArgoNamespace, name, 2*time.Second)
	if api.StatusOf(err) != http.StatusGatewayTimeout || !strings.Contains(err.Error(), "its state is Unknown") {
		t.Errorf("tree of a cluster with no agent: %v, want 504 naming its state", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the unanswered question took %s, want about its 2s timeout", took)
	}

	waitFor(t, time.Minute, "the audit history names the questions", func() bool {
		var audit struct {
			Items []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"items"`
		}
		if !getJSON(t, url+"/api/v1/audit?actor=root&limit=1000", f.token, &audit) {
			return false
		}
		n := 0
		for _, a := range audit.Items {
			if a.Kind == "api" && (a.Name == "applications.inspect" || a.Name == "applications.logs") {
				n++
			}
		}
		return n >= 7
	})
}

// liveApp is an Application a real spoke's Argo CD synced, through a real
// hub: syncedApp's.
type liveApp struct {
	hub                    *api.Client
	url, cluster, name, ns string
	commit                 string
	manifest               json.RawMessage
	dyn                    dynamic.Interface
	spokeApps              dynamic.ResourceInterface
}

// syncedApp starts a hub with a fold, registers the cluster prefix+NS (NS
// a namespace of the test's), starts its real spoke, commits files to a
// new repository, applies an Application named prefix+NS of its app/
// path with automated sync, and waits for the spoke's Argo CD to have it
// Synced and Healthy, its first sync ended and in its history.
func syncedApp(t testing.TB, e *kubetest.Env, f *fixture, prefix string, files map[string]string) liveApp {
	t.Helper()
	hubc, _, url := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold",
		"--projector-group", f.prefix + "projector"})
	a := liveApp{hub: hubc, url: url, ns: e.Namespace(t)}
	a.cluster, a.name = prefix+a.ns, prefix+a.ns
	reg, err := hubc.RegisterCluster(t.Context(), a.cluster, api.ClusterRequest{}, api.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startSpoke(t, e, f, url, a.cluster, reg.JoinToken)
	repo := kubetest.NewRepo(t)
	a.commit = repo.Commit(t, "v1", files)
	a.manifest = json.RawMessage(fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":%q,"namespace":%q},
	"spec":{"project":"default","source":{"repoURL":%q,"path":"app","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":%q},"syncPolicy":{"automated":{}}}}`,
		a.name, kubetest.ArgoNamespace, repo.URL, a.ns))
	if _, err := hubc.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{a.cluster}, Manifest: a.manifest},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if a.dyn, err = dynamic.NewForConfig(e.Admin); err != nil {
		t.Fatal(err)
	}
	a.spokeApps = a.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	// Synced can come before the sync's operation ends and its history
	// entry is written: a test that counts the history waits for both.
	waitFor(t, 3*time.Minute, "Argo CD on the spoke syncs the Application", func() bool {
		got, err := a.spokeApps.Get(t.Context(), a.name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		history, _, _ := unstructured.NestedSlice(got.Object, "status", "history")
		return unstructuredString(got.Object, "status", "sync", "status") == "Synced" &&
			unstructuredString(got.Object, "status", "health", "status") == "Healthy" &&
			unstructuredString(got.Object, "status", "operationState", "phase") == "Succeeded" && len(history) > 0
	})
	return a
}

// BenchmarkLiveQuestionsOnArgoCD measures a live question's round trip on
// real servers, one question at a time: from the hub API call to its
// answer, through the hub's question on the real broker, the real spoke's
// reads of its cluster's real apiserver (the Application's tree, diff
// and a live object of a ConfigMap and a Service that Argo CD synced),
// and its answer read back. docs/hub.md has the numbers.
//
//	go test -tags integration -run '^$' -bench BenchmarkLiveQuestionsOnArgoCD -benchtime 100x ./cmd/argosy-hub/internal/cli/
func BenchmarkLiveQuestionsOnArgoCD(b *testing.B) {
	e := kubetest.Current(b)
	if err := e.StartArgoCD(b.Context()); err != nil {
		b.Fatal(err)
	}
	f := newFixture(b, buildHub(b))
	a := syncedApp(b, e, f, "bench-", map[string]string{
		"app/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n",
		"app/svc.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: demo\nspec:\n  ports:\n  - port: 80\n",
		"web/deploy.yaml": deploymentYAML,
	})
	target := api.LiveTarget{Version: "v1", Kind: "ConfigMap", Namespace: a.ns, Name: "demo"}
	webApp, pod := deploymentApp(b, e, a)
	for name, ask := range map[string]func() (*api.LiveAnswer, error){
		"tree": func() (*api.LiveAnswer, error) {
			return a.hub.Tree(b.Context(), a.cluster, kubetest.ArgoNamespace, a.name, 10*time.Second)
		},
		"diff": func() (*api.LiveAnswer, error) {
			return a.hub.Diff(b.Context(), a.cluster, kubetest.ArgoNamespace, a.name, 10*time.Second)
		},
		"manifest": func() (*api.LiveAnswer, error) {
			return a.hub.Manifest(b.Context(), a.cluster, kubetest.ArgoNamespace, a.name, target, 10*time.Second)
		},
		"logs": func() (*api.LiveAnswer, error) {
			return a.hub.Logs(b.Context(), a.cluster, kubetest.ArgoNamespace, webApp, a.ns, pod, api.LogOptions{Container: "web", Timestamps: true},
				10*time.Second)
		},
	} {
		b.Run(name, func(b *testing.B) {
			// The spoke's first answer warms its reads (and the Pod joins
			// its Deployment's tree once the spoke's Argo CD lists it).
			waitFor(b, time.Minute, "a first answer", func() bool { _, err := ask(); return err == nil })
			for b.Loop() {
				if _, err := ask(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// deploymentYAML is a Deployment of one Pod of one container, web.
const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: web, image: nginx:1.27}
`

// webLines is what the container web of deploymentApp's Pod wrote.
var webLines = []kubetest.LogLine{
	{Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Text: "started"},
	{Time: time.Date(2026, 11, 27, 10, 0, 1, 2, time.UTC), Text: "GET /"},
	{Time: time.Date(2026, 11, 27, 10, 0, 2, 500_000_000, time.UTC), Text: "GET /health"},
}

// deploymentApp applies to a's cluster, through the hub, a second
// Application, a.name+"-web", of the path web/ of a's repository, which
// must hold deploymentYAML. Once the spoke's Argo CD synced it, it runs
// the Deployment as its controllers and scheduler would (the environment
// runs neither, nor a container): a ReplicaSet, and a Pod bound to a Node
// whose kubelet answers the container's log with webLines. It returns the
// Application's and the Pod's names.
func deploymentApp(t testing.TB, e *kubetest.Env, a liveApp) (app, pod string) {
	t.Helper()
	app, pod = a.name+"-web", "web-5d9-x1"
	manifest := strings.Replace(strings.Replace(string(a.manifest), `"path":"app"`, `"path":"web"`, 1), fmt.Sprintf(`"name":%q`, a.name),
		fmt.Sprintf(`"name":%q`, app), 1)
	if _, err := a.hub.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{a.cluster}, Manifest: json.RawMessage(manifest)},
		api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	deployments := a.dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(a.ns)
	var dep *unstructured.Unstructured
	waitFor(t, 3*time.Minute, "Argo CD on the spoke applies the Deployment", func() bool {
		var err error
		dep, err = deployments.Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil
	})
	node := e.StartKubelet(t, func(namespace, p, container string) []kubetest.LogLine {
		if namespace != a.ns || p != pod || container != "web" {
			return nil
		}
		return webLines
	})
	owned := func(apiVersion, kind, name string, owner *unstructured.Unstructured, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": a.ns, "labels": map[string]any{"app": "web"},
				"ownerReferences": []any{map[string]any{"apiVersion": owner.GetAPIVersion(), "kind": owner.GetKind(), "name": owner.GetName(),
					"uid": string(owner.GetUID()), "controller": true}}},
			"spec": spec}}
	}
	containers := []any{map[string]any{"name": "web", "image": "nginx:1.27"}}
	rs, err := a.dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}).Namespace(a.ns).Create(t.Context(),
		owned("apps/v1", "ReplicaSet", "web-5d9", dep, map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": map[string]any{"containers": containers}}}),
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(a.ns).Create(t.Context(),
		owned("v1", "Pod", pod, rs, map[string]any{"nodeName": node, "containers": containers}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return app, pod
}
