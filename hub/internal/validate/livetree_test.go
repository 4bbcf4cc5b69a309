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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var tree v1alpha1.ApplicationTree
	if err := dec.Decode(&tree); err != nil {
		t.Fatalf("the live tree is not an Argo CD ApplicationTree: %v", err)
	}
	if len(tree.Nodes) < 5 {
		t.Fatalf("decoded %d nodes; want the golden tree's", len(tree.Nodes))
	}
	back, err := json.Marshal(tree)
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
		t.Errorf("the live tree through Argo CD's types (-live +argo):\n%s", diff)
	}
}
