package argoproto

import (
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestMessages: each message decodes, with Argo CD's own types, to what
// its JSON said.
func TestMessages(t *testing.T) {
	b, err := Tree([]byte(`{"nodes":[{"kind":"Pod","name":"web-1","namespace":"web","version":"v1",
		"parentRefs":[{"group":"apps","kind":"ReplicaSet","name":"web-5f","namespace":"web"}],"health":{"status":"Healthy"}}]}`))
	var tree v1alpha1.ApplicationTree
	if err != nil || tree.Unmarshal(b) != nil || len(tree.Nodes) != 1 || tree.Nodes[0].Name != "web-1" ||
		tree.Nodes[0].ParentRefs[0].Kind != "ReplicaSet" || tree.Nodes[0].Health.Status != "Healthy" {
		t.Errorf("Tree: %v %+v", err, tree)
	}
	b, err = Application([]byte(`{"metadata":{"name":"web","namespace":"fleet-prod"},"spec":{"project":"shop"},
		"status":{"sync":{"status":"Synced"}}}`))
	var app v1alpha1.Application
	if err != nil || app.Unmarshal(b) != nil || app.Name != "web" || app.Spec.Project != "shop" || app.Status.Sync.Status != "Synced" {
		t.Errorf("Application: %v %+v", err, app)
	}
	b, err = ManagedResources([]byte(`{"items":[{"kind":"ConfigMap","name":"a","modified":true,"syncStatus":"OutOfSync"},{"kind":"Secret","name":"b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var items []v1alpha1.ResourceDiff
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		v, m := protowire.ConsumeBytes(b[n:])
		if num != 1 || typ != protowire.BytesType || m < 0 {
			t.Fatalf("field %d of type %d", num, typ)
		}
		var d v1alpha1.ResourceDiff
		if err := d.Unmarshal(v); err != nil {
			t.Fatal(err)
		}
		items, b = append(items, d), b[n+m:]
	}
	if len(items) != 2 || items[0].Name != "a" || !items[0].Modified || items[1].Kind != "Secret" {
		t.Errorf("ManagedResources: %+v", items)
	}
	for name, f := range map[string]func([]byte) ([]byte, error){"Tree": Tree, "Application": Application, "ManagedResources": ManagedResources} {
		if _, err := f([]byte(`{"nodes":`)); err == nil {
			t.Errorf("%s of broken JSON: no error", name)
		}
	}
}

// FuzzMessages: no JSON makes an encoder panic.
func FuzzMessages(f *testing.F) {
	f.Add([]byte(`{"nodes":[{"kind":"Pod","parentRefs":[{}]}],"items":[{"kind":"x"}],"metadata":{"name":"a"}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		_, _ = Tree(js)
		_, _ = Application(js)
		_, _ = ManagedResources(js)
	})
}
