package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
)

// TestLiveTreeIsArgoCDApplicationTree holds the spoke's live tree
// (spoke/live) to Argo CD's ApplicationTree, which its UI reads: the tree
// spoke/live's TestTreeGolden writes decodes into v1alpha1.ApplicationTree
// with no unknown field and encodes back to the same JSON. The spoke may
// not link Argo CD, so the check lives here, on the golden file.
func TestLiveTreeIsArgoCDApplicationTree(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "spoke", "live", "testdata", "tree.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tree v1alpha1.ApplicationTree
	throughArgo(t, "the live tree", raw, &tree)
	if len(tree.Nodes) < 5 {
		t.Fatalf("decoded %d nodes; want the golden tree's", len(tree.Nodes))
	}
}

// throughArgo decodes raw into v, an Argo CD type, with no unknown field,
// and checks that v encodes back to the same JSON.
func throughArgo(t *testing.T, what string, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s is not Argo CD's %T: %v\n%s", what, v, err, raw)
	}
	back, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s through Argo CD's types (-ours +argo):\n%s", what, diff)
	}
}

// TestLiveDiffIsArgoCDManagedResources holds the spoke's diff answer to
// Argo CD's ManagedResourcesResponse, whose items its UI's diff view
// reads: each item of spoke/live's testdata/diff.json decodes into
// v1alpha1.ResourceDiff with no unknown field but syncStatus (Argosy's
// addition, from the Application's status) and encodes back the same.
func TestLiveDiffIsArgoCDManagedResources(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "spoke", "live", "testdata", "diff.json"))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Items) < 5 {
		t.Fatalf("decoded %d items; want the golden diff's", len(answer.Items))
	}
	modified := 0
	for _, item := range answer.Items {
		delete(item, "syncStatus")
		b, err := json.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		var d v1alpha1.ResourceDiff
		throughArgo(t, "a live diff item", b, &d)
		if d.Modified {
			modified++
		}
	}
	if modified == 0 {
		t.Error("no item of the golden diff is modified: the field is not held")
	}
}
