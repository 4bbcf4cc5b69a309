package mirror

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRefusals: a refusal is the object's condition until it expires,
// the last one of an object counts, and past the bound the oldest go.
func TestRefusals(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := NewRefusals(10 * time.Minute)
	r.now = func() time.Time { return now }
	if _, ok := r.condition("mirror-prod", "web"); ok {
		t.Error("a condition with no refusal")
	}
	r.Add("mirror-prod", "web", "k8s:bob's sync was refused: role viewer")
	now = now.Add(time.Minute)
	r.Add("mirror-prod", "web", "k8s:bob's delete was refused: role viewer")
	c, ok := r.condition("mirror-prod", "web")
	if !ok || c["type"] != ConditionRefused || c["message"] != "k8s:bob's delete was refused: role viewer" || c["lastTransitionTime"] != "2026-11-27T12:01:00Z" {
		t.Errorf("condition %v %v", c, ok)
	}
	if _, ok := r.condition("mirror-prod", "api"); ok {
		t.Error("another object's condition")
	}
	now = now.Add(11 * time.Minute)
	if _, ok := r.condition("mirror-prod", "web"); ok {
		t.Error("an expired refusal is still a condition")
	}
	for i := range maxRefusals + 5 {
		now = now.Add(time.Second)
		r.Add("mirror-prod", fmt.Sprintf("app-%d", i), "refused")
	}
	if len(r.m) != maxRefusals {
		t.Errorf("%d refusals kept, want %d", len(r.m), maxRefusals)
	}
	if _, ok := r.condition("mirror-prod", "app-0"); ok {
		t.Error("the oldest refusal is kept past the bound")
	}
	if _, ok := r.condition("mirror-prod", fmt.Sprintf("app-%d", maxRefusals+4)); !ok {
		t.Error("the newest refusal went")
	}
	var none *Refusals
	none.Add("a", "b", "c") // a proxy or webhook without refusals
	if _, ok := none.condition("a", "b"); ok {
		t.Error("a nil Refusals has a condition")
	}
}

// TestWithCondition: the condition joins the object's status and its hash
// changes, so that the mirror writes it.
func TestWithCondition(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "web",
		"annotations": map[string]any{AnnotationHash: "old"}}, "status": map[string]any{"conditions": []any{map[string]any{"type": "SyncError"}}}}}
	if err := withCondition(obj, map[string]any{"type": ConditionRefused, "message": "no"}); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if len(cs) != 2 || cs[1].(map[string]any)["type"] != ConditionRefused {
		t.Errorf("conditions %v", cs)
	}
	if h := obj.GetAnnotations()[AnnotationHash]; h == "old" || h == "" {
		t.Errorf("hash %q, want a new one", h)
	}
}

// TestRefusalsAtOnce: fifty webhook and proxy calls adding refusals while
// rounds read them (run with -race, as make test does).
func TestRefusalsAtOnce(t *testing.T) {
	r := NewRefusals(time.Minute)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Add("mirror-prod", fmt.Sprintf("app-%d", i%7), fmt.Sprintf("refused %d", i))
		}()
		go func() {
			defer wg.Done()
			r.condition("mirror-prod", fmt.Sprintf("app-%d", i%7))
		}()
	}
	wg.Wait()
	for i := range 7 {
		if _, ok := r.condition("mirror-prod", fmt.Sprintf("app-%d", i)); !ok {
			t.Errorf("app-%d has no refusal after fifty adds", i)
		}
	}
}
