package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/argosyproj/argosy/hub/api"
)

// marked is the mirrored Application mirror-prod/web of cluster prod,
// marked with alice's sync, admitted in review u1 at at.
func marked(t *testing.T, at time.Time) (*dynfake.FakeDynamicClient, string) {
	t.Helper()
	mark, err := json.Marshal(relayed{ID: "u1", User: "alice", Groups: []string{"team-a"}, At: at,
		Request: api.OperationRequest{Operation: "sync", Revision: "main"}})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": "mirror-prod",
			"labels":      map[string]any{LabelManagedBy: FieldManager, LabelCluster: "prod", LabelRelay: relayPending},
			"annotations": map[string]any{AnnotationNamespace: "argocd", AnnotationRelay: string(mark)}}}}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{applicationGVR: "ApplicationList"}, obj)
	return dyn, string(mark)
}

func newTestRelay(hub Operator, dyn *dynfake.FakeDynamicClient, refusals *Refusals) *Relay {
	return newRelay(hub, dyn, WithRelayRefusals(refusals))
}

// stillMarked reports whether mirror-prod/web holds a mark and its label.
func stillMarked(t *testing.T, dyn *dynfake.FakeDynamicClient) bool {
	t.Helper()
	obj, err := dyn.Resource(applicationGVR).Namespace("mirror-prod").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, annotated := obj.GetAnnotations()[AnnotationRelay]
	_, labelled := obj.GetLabels()[LabelRelay]
	if annotated != labelled {
		t.Errorf("the mark's annotation %v and label %v", annotated, labelled)
	}
	return annotated
}

var web = types.NamespacedName{Namespace: "mirror-prod", Name: "web"}

// TestRelayAsksOnce: a marked operation is asked of the hub as its user,
// under the review's key, then the mark goes. A relay cut short after the
// hub took it (the mark could not be taken off) asks again under the same
// key, which the hub answers with what the first wrote.
func TestRelayAsksOnce(t *testing.T) {
	dyn, _ := marked(t, time.Now())
	hub := &fakeHub{}
	r := newTestRelay(hub, dyn, nil)
	failPatch := true
	dyn.PrependReactor("patch", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failPatch {
			return true, nil, errors.New("the connection was cut")
		}
		return false, nil, nil
	})
	if err := r.relay(t.Context(), web); err == nil {
		t.Fatal("a mark that could not be taken off: no error, so no retry")
	}
	if !stillMarked(t, dyn) {
		t.Fatal("the mark went")
	}
	failPatch = false
	if err := r.relay(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	if stillMarked(t, dyn) {
		t.Error("the mark stayed after the hub took the operation")
	}
	want := `operate prod argocd/web {"operation":"sync","revision":"main"}`
	if len(hub.calls) != 2 || hub.calls[0] != want || hub.calls[1] != want {
		t.Fatalf("hub calls %q, want %q twice", hub.calls, want)
	}
	for _, o := range hub.opts {
		if o.IdempotencyKey != "mirror-u1" || o.DryRun || o.ActAs == nil || o.ActAs.User != "alice" || fmt.Sprint(o.ActAs.Groups) != "[team-a]" {
			t.Errorf("call options %+v %+v, want as alice of team-a, keyed by the review", o, o.ActAs)
		}
	}
	// Relayed: nothing is asked again.
	if err := r.relay(t.Context(), web); err != nil || len(hub.calls) != 2 {
		t.Errorf("a relay of an unmarked object: %v, %d calls", err, len(hub.calls))
	}
}

// TestRelayRefusals: the hub's refusal is written on the object and the
// mark goes; a hub that cannot be reached keeps the mark, to try again; an
// operation that waited too long is not asked, and says so.
func TestRelayRefusals(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		dyn, _ := marked(t, time.Now())
		hub := &fakeHub{refuseOperate: &api.ResponseError{Status: http.StatusForbidden, Body: api.Error{Error: "denied: k8s:alice may not applications.operate"}}}
		refusals := NewRefusals(time.Minute)
		if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if stillMarked(t, dyn) {
			t.Error("a refused operation's mark stayed")
		}
		if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.HasPrefix(fmt.Sprint(c["message"]),
			"k8s:alice's sync was refused: the hub refused the change of argocd/web on cluster prod: denied") {
			t.Errorf("the refusal's condition: %v %v", c, ok)
		}
	})
	t.Run("the hub cannot be reached", func(t *testing.T) {
		dyn, _ := marked(t, time.Now())
		hub := &fakeHub{refuseOperate: errors.New("connection refused")}
		if err := newTestRelay(hub, dyn, nil).relay(t.Context(), web); err == nil {
			t.Error("no error, so no retry")
		}
		if !stillMarked(t, dyn) {
			t.Error("the mark went")
		}
	})
	t.Run("expired", func(t *testing.T) {
		dyn, _ := marked(t, time.Now().Add(-time.Hour))
		hub := &fakeHub{}
		refusals := NewRefusals(time.Minute)
		if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if stillMarked(t, dyn) || len(hub.calls) != 0 {
			t.Errorf("an expired operation: marked %v, calls %v", stillMarked(t, dyn), hub.calls)
		}
		if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.Contains(fmt.Sprint(c["message"]), "k8s:alice's sync was not run") {
			t.Errorf("the condition: %v %v", c, ok)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		dyn, mark := marked(t, time.Now())
		obj, _ := dyn.Resource(applicationGVR).Namespace("mirror-prod").Get(t.Context(), "web", metav1.GetOptions{})
		ann := obj.GetAnnotations()
		ann[AnnotationRelay] = strings.TrimSuffix(mark, "}")
		obj.SetAnnotations(ann)
		if _, err := dyn.Resource(applicationGVR).Namespace("mirror-prod").Update(t.Context(), obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hub := &fakeHub{}
		if err := newTestRelay(hub, dyn, nil).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if stillMarked(t, dyn) || len(hub.calls) != 0 {
			t.Errorf("an unreadable mark: marked %v, calls %v", stillMarked(t, dyn), hub.calls)
		}
	})
}
