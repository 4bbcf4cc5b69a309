package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke/live"
)

var update = flag.Bool("update", false, "rewrite testdata/tree.json and testdata/diff.json")

const argoNS = "argocd"

// obj is an object of apiVersion and kind named ns/name, with uid and
// extra top-level fields; owner, if set, is its controller.
func obj(apiVersion, kind, ns, name, uid string, owner *unstructured.Unstructured, extra map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "uid": uid, "resourceVersion": "7", "creationTimestamp": "2026-01-02T03:04:05Z",
		"managedFields": []any{map[string]any{"manager": "kubectl"}}}
	if ns != "" {
		meta["namespace"] = ns
	}
	if owner != nil {
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": owner.GetAPIVersion(), "kind": owner.GetKind(),
			"name": owner.GetName(), "uid": string(owner.GetUID()), "controller": true}}
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range extra {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// fixture is an Application "web" whose Deployment owns a ReplicaSet that
// owns a Pod, whose Service has an EndpointSlice, and whose
// Secret and ConfigMap own nothing; besides it, objects of no Application.
func fixture() []runtime.Object {
	dep := obj("apps/v1", "Deployment", "shop", "web", "u-dep", nil, nil)
	rs := obj("apps/v1", "ReplicaSet", "shop", "web-5d9", "u-rs", dep, nil)
	pod := obj("v1", "Pod", "shop", "web-5d9-x1", "u-pod", rs, map[string]any{
		"spec": map[string]any{"nodeName": "n1", "containers": []any{
			map[string]any{"name": "web", "image": "nginx:1.27"}, map[string]any{"name": "log", "image": "busybox:1"}}},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{
			map[string]any{"name": "web", "ready": true, "restartCount": int64(2)}, map[string]any{"name": "log", "ready": false}}}})
	svc := obj("v1", "Service", "shop", "web", "u-svc", nil, nil)
	res := func(group, kind, name, health string) any {
		r := map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": "shop", "name": name, "status": "Synced"}
		if health != "" {
			r["health"] = map[string]any{"status": health, "message": health + " it is"}
		}
		return r
	}
	app := obj("argoproj.io/v1alpha1", "Application", argoNS, "web", "u-app", nil, map[string]any{"status": map[string]any{"resources": []any{
		res("apps", "Deployment", "web", "Healthy"), res("", "Service", "web", "Healthy"),
		res("", "ConfigMap", "web", ""), res("", "Secret", "web", ""), res("", "ConfigMap", "gone", "Missing")}}})
	return []runtime.Object{app, dep, rs, pod, svc,
		obj("discovery.k8s.io/v1", "EndpointSlice", "shop", "web-abc", "u-eps", svc, nil),
		obj("v1", "ConfigMap", "shop", "web", "u-cm", nil, map[string]any{"data": map[string]any{"k": "v"}}),
		obj("v1", "Secret", "shop", "web", "u-sec", nil, map[string]any{"data": map[string]any{"password": "aHVudGVyMg=="}}),
		// Not the Application's: a Pod of another ReplicaSet, and a Secret.
		obj("v1", "Pod", "shop", "other", "u-other", obj("apps/v1", "ReplicaSet", "shop", "other", "u-rs2", nil, nil), nil),
		obj("v1", "Secret", "shop", "other", "u-sec2", nil, map[string]any{"data": map[string]any{"token": "c2VjcmV0"}}),
	}
}

func newFake(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	kinds := map[schema.GroupVersionResource]string{}
	for _, r := range []struct{ g, v, res, kind string }{{"argoproj.io", "v1alpha1", "applications", "Application"},
		{"apps", "v1", "deployments", "Deployment"}, {"apps", "v1", "replicasets", "ReplicaSet"},
		{"apps", "v1", "controllerrevisions", "ControllerRevision"}, {"batch", "v1", "jobs", "Job"},
		{"", "v1", "pods", "Pod"}, {"", "v1", "services", "Service"},
		{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"}, {"", "v1", "configmaps", "ConfigMap"}, {"", "v1", "secrets", "Secret"}} {
		kinds[schema.GroupVersionResource{Group: r.g, Version: r.v, Resource: r.res}] = r.kind + "List"
	}
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, objs...)
}

// fakeLogs serves a fixed log and counts its calls and their options.
type fakeLogs struct {
	log   string
	calls []string
	opts  []live.LogOptions
}

func (f *fakeLogs) PodLogs(_ context.Context, ns, pod string, opts live.LogOptions) (io.ReadCloser, error) {
	f.calls, f.opts = append(f.calls, ns+"/"+pod+"/"+opts.Container), append(f.opts, opts)
	return io.NopCloser(strings.NewReader(f.log)), nil
}

func newSource(t *testing.T, logs live.LogReader, opts ...live.Option) *live.Source {
	t.Helper()
	s, err := live.New(newFake(fixture()...), logs, argoNS, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTreeGolden holds the tree's JSON to testdata/tree.json, which
// hub/internal/validate decodes strictly into Argo CD's ApplicationTree
// (TestLiveTreeIsArgoCDApplicationTree): managed resources with their
// health, children with their parents, a Pod's images and info.
func TestTreeGolden(t *testing.T) {
	tree, err := newSource(t, &fakeLogs{}).Tree(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tree.json", tree)
	for _, n := range tree.Nodes {
		if n.Name == "other" || n.Name == "gone" {
			t.Errorf("the tree holds %s, which is not the Application's", n.TreeRef)
		}
	}
}

// golden holds v's indented JSON to testdata/name; -update rewrites it.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-golden +got; go test -run %s . -args -update rewrites it):\n%s", name, t.Name(), diff)
	}
}

func TestTreeErrors(t *testing.T) {
	if _, err := newSource(t, &fakeLogs{}).Tree(t.Context(), "nope"); !errors.Is(err, live.ErrAppNotFound) {
		t.Errorf("tree of an unknown application: %v; want ErrAppNotFound", err)
	}
	_, err := newSource(t, &fakeLogs{}, live.WithMaxNodes(6)).Tree(t.Context(), "web")
	if !errors.Is(err, live.ErrTooLarge) || !strings.Contains(err.Error(), "more than 6 nodes") {
		t.Errorf("tree of 7 nodes bounded at 6: %v; want ErrTooLarge saying so", err)
	}
}

// TestManifestRedacts holds the masking of docs/spoke.md: a Secret's values
// are masked and its last-applied annotation dropped, no object keeps its
// managedFields, and nothing outside the tree is read.
func TestManifestRedacts(t *testing.T) {
	s := newSource(t, &fakeLogs{})
	raw, err := s.Manifest(t.Context(), "web", live.Ref{Kind: "Secret", Namespace: "shop", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if d := got["data"].(map[string]any); d["password"] != live.SecretMask {
		t.Errorf("secret data %v; want masked", d)
	}
	if bytes.Contains(raw, []byte("aHVudGVyMg")) || bytes.Contains(raw, []byte("managedFields")) {
		t.Errorf("manifest shows the secret's value or its managed fields: %s", raw)
	}
	for _, ref := range []live.Ref{{Kind: "Secret", Namespace: "shop", Name: "other"}, {Kind: "Pod", Namespace: "shop", Name: "other"},
		{Kind: "ConfigMap", Namespace: "shop", Name: "gone"}, {Kind: "Secret", Namespace: "shop", Name: "web", UID: "u-sec2"}} {
		if _, err := s.Manifest(t.Context(), "web", ref); !errors.Is(err, live.ErrNotInApp) {
			t.Errorf("manifest of %s: %v; want ErrNotInApp", ref, err)
		}
	}
}

func TestRedact(t *testing.T) {
	sec := obj("v1", "Secret", "shop", "s", "u", nil, map[string]any{"data": map[string]any{"a": "eA==", "b": ""},
		"stringData": map[string]any{"c": "clear"}})
	sec.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"a":"eA=="}}`, "keep": "me"})
	live.Redact(sec)
	want := map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"a": live.SecretMask, "b": live.SecretMask},
		"stringData": map[string]any{"c": live.SecretMask}, "metadata": map[string]any{"name": "s", "namespace": "shop", "uid": "u",
			"resourceVersion": "7", "creationTimestamp": "2026-01-02T03:04:05Z", "annotations": map[string]any{"keep": "me"}}}
	if diff := cmp.Diff(want, sec.Object); diff != "" {
		t.Errorf("redacted secret (-want +got):\n%s", diff)
	}
	cm := obj("v1", "ConfigMap", "shop", "c", "u", nil, map[string]any{"data": map[string]any{"a": "clear"}})
	live.Redact(cm)
	if _, ok := cm.Object["metadata"].(map[string]any)["managedFields"]; ok || cm.Object["data"].(map[string]any)["a"] != "clear" {
		t.Errorf("redacted config map %v: want its data and no managedFields", cm.Object)
	}
}

// TestLogsBound holds the log bounds and the authorization rule of
// docs/spoke.md: the newest lines within the byte bound, Truncated when
// older ones were dropped, and no log read of a Pod outside the tree.
func TestLogsBound(t *testing.T) {
	pod := live.Ref{Kind: "Pod", Namespace: "shop", Name: "web-5d9-x1"}
	tests := []struct {
		name, log string
		max       int
		want      []string
		truncated bool
	}{
		{"fits", "one\ntwo\n", 8, []string{"one", "two"}, false},
		{"no final line end", "one\ntwo", 8, []string{"one", "two"}, false},
		{"keeps the newest", "one\ntwo\nthree\n", 10, []string{"two", "three"}, true},
		{"cuts a long line to its tail", "one\n" + strings.Repeat("x", 5000) + "yz\n", 4, []string{"xyz"}, true},
		{"empty", "", 8, []string{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLogs{log: tt.log}
			got, err := newSource(t, f, live.WithMaxLogBytes(tt.max)).Logs(t.Context(), "web", pod, live.LogOptions{Container: "web"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Lines); diff != "" || got.Truncated != tt.truncated {
				t.Errorf("lines (-want +got):\n%s truncated %v, want %v", diff, got.Truncated, tt.truncated)
			}
			if len(f.calls) != 1 || f.calls[0] != "shop/web-5d9-x1/web" {
				t.Errorf("log reads %v", f.calls)
			}
		})
	}
	// A question's options reach the log reader, the agent's tail
	// default where it names none.
	f := &fakeLogs{log: "2026-11-27T10:00:00.000000001Z ready\n"}
	a, _, err := newSource(t, f).Answer(t.Context(), &schemas.QueryRequested{Resource: schemas.Resource{Namespace: argoNS, Name: "web"},
		Query: schemas.QueryLogs, Target: &schemas.ResourceRef{Version: "v1", Kind: "Pod", Namespace: "shop", Name: "web-5d9-x1"},
		Container: "web", SinceSeconds: 60, Timestamps: true})
	if want := (live.LogOptions{Container: "web", TailLines: live.DefaultTailLines, SinceSeconds: 60, Timestamps: true}); err != nil ||
		len(f.opts) != 1 || f.opts[0] != want || !strings.Contains(string(a), `"lines":["2026-11-27T10:00:00.000000001Z ready"],"timestamps":true`) {
		t.Errorf("a logs question: %s, %v; read with %+v, want %+v", a, err, f.opts, want)
	}
	f = &fakeLogs{log: "secret\n"}
	s := newSource(t, f)
	for _, ref := range []live.Ref{{Kind: "Pod", Namespace: "shop", Name: "other"}, {Kind: "Secret", Namespace: "shop", Name: "web"},
		{Kind: "Pod", Namespace: "elsewhere", Name: "web-5d9-x1"}} {
		if _, err := s.Logs(t.Context(), "web", ref, live.LogOptions{}); !errors.Is(err, live.ErrNotInApp) {
			t.Errorf("logs of %s: %v; want ErrNotInApp", ref, err)
		}
	}
	if _, err := s.Logs(t.Context(), "nope", pod, live.LogOptions{}); !errors.Is(err, live.ErrAppNotFound) {
		t.Errorf("logs of an unknown application: %v; want ErrAppNotFound", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("refused questions read logs: %v", f.calls)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := live.New(nil, nil, "", live.WithMaxNodes(0))
	for _, want := range []string{"no dynamic client", "no log reader", "no Argo CD namespace", "bounds must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with nothing: %v; want it to say %q", err, want)
		}
	}
}

// TestDiff holds the diff's rules on objects of each case: a Secret
// applied with stringData (and the null creationTimestamp serializers
// write) is unmodified against its stored data; a ConfigMap changed since
// it was applied is modified; a Deployment applied server-side has no
// target state and is not modified; a missing ConfigMap is "null" and
// modified; no answer passes the node bound.
func TestDiff(t *testing.T) {
	objs := fixture()
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		switch u.GetKind() + "/" + u.GetName() {
		case "Secret/web":
			u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Secret",` +
				`"metadata":{"creationTimestamp":null,"name":"web","namespace":"shop"},"stringData":{"password":"hunter2"}}`})
		case "ConfigMap/web":
			u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap",` +
				`"metadata":{"name":"web","namespace":"shop"},"data":{"k":"old"}}`})
		}
	}
	s, err := live.New(newFake(objs...), &fakeLogs{}, argoNS)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Diff(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]live.ResourceDiff{}
	for _, it := range d.Items {
		got[it.Kind+"/"+it.Name] = it
	}
	want := map[string]live.ResourceDiff{
		"Deployment/web": {Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", SyncStatus: "Synced", ResourceVersion: "7",
			NormalizedLiveState: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z",` +
				`"name":"web","namespace":"shop","resourceVersion":"7","uid":"u-dep"}}`},
		"Secret/web": {Kind: "Secret", Namespace: "shop", Name: "web", SyncStatus: "Synced", ResourceVersion: "7",
			TargetState:         `{"apiVersion":"v1","data":{"password":"++++++++"},"kind":"Secret","metadata":{"name":"web","namespace":"shop"}}`,
			NormalizedLiveState: `{"apiVersion":"v1","data":{"password":"++++++++"},"kind":"Secret","metadata":{"name":"web","namespace":"shop"}}`},
		"ConfigMap/web": {Kind: "ConfigMap", Namespace: "shop", Name: "web", SyncStatus: "Synced", ResourceVersion: "7", Modified: true,
			TargetState:         `{"apiVersion":"v1","data":{"k":"old"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"shop"}}`,
			NormalizedLiveState: `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"shop"}}`},
		"ConfigMap/gone": {Kind: "ConfigMap", Namespace: "shop", Name: "gone", SyncStatus: "Synced", Modified: true, NormalizedLiveState: "null"},
		"Service/web": {Kind: "Service", Namespace: "shop", Name: "web", SyncStatus: "Synced", ResourceVersion: "7",
			NormalizedLiveState: `{"apiVersion":"v1","kind":"Service","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z",` +
				`"name":"web","namespace":"shop","resourceVersion":"7","uid":"u-svc"}}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	golden(t, "diff.json", d)
	small, err := live.New(newFake(fixture()...), &fakeLogs{}, argoNS, live.WithMaxNodes(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Diff(t.Context(), "web"); !errors.Is(err, live.ErrTooLarge) {
		t.Errorf("diff of 5 resources bounded at 4: %v; want ErrTooLarge", err)
	}
	if _, err := s.Diff(t.Context(), "nope"); !errors.Is(err, live.ErrAppNotFound) {
		t.Errorf("diff of an unknown application: %v; want ErrAppNotFound", err)
	}
}
