package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
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
	return markedAs(t, at, "mirror-prod", "prod", testMarks)
}

// markedAs is marked in namespace ns, labelled as cluster's, the mark
// signed with key.
func markedAs(t *testing.T, at time.Time, ns, cluster string, key *MarkKey) (*dynfake.FakeDynamicClient, string) {
	t.Helper()
	mark, err := key.sign(relayed{ID: "u1", User: "alice", Groups: []string{"team-a"}, At: at, Cluster: cluster, Namespace: "argocd",
		Request: api.OperationRequest{Operation: "sync", Revision: "main"}}, ns, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": ns,
			"labels":      map[string]any{LabelManagedBy: FieldManager, LabelCluster: cluster, LabelRelay: relayPending},
			"annotations": map[string]any{AnnotationNamespace: "argocd", AnnotationRelay: mark}}}}
	// Its namespace, as the mirror makes it.
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{LabelManagedBy: FieldManager, LabelCluster: strings.TrimPrefix(ns, "mirror-")}}}}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{applicationGVR: "ApplicationList", namespaceGVR: "NamespaceList"}, obj, nsObj)
	return dyn, mark
}

func newTestRelay(hub Operator, dyn *dynfake.FakeDynamicClient, refusals *Refusals) *Relay {
	return newRelay(hub, dyn, "mirror-", testMarks, WithRelayRefusals(refusals))
}

// asked is the hub call the Relay makes for the sync marked at at.
func asked(at time.Time) string {
	notAfter := at.Add(relayMaxAge)
	b, _ := json.Marshal(api.OperationRequest{Operation: "sync", Revision: "main", NotAfter: &notAfter})
	return "operate prod argocd/web " + string(b)
}

// stillMarked reports whether mirror-prod/web holds a mark and its label.
func stillMarked(t *testing.T, dyn *dynfake.FakeDynamicClient) bool {
	t.Helper()
	return stillMarkedIn(t, dyn, "mirror-prod")
}

// stillMarkedIn is stillMarked of ns/web.
func stillMarkedIn(t *testing.T, dyn *dynfake.FakeDynamicClient, ns string) bool {
	t.Helper()
	obj, err := dyn.Resource(applicationGVR).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
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
	at := time.Now()
	dyn, _ := marked(t, at)
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
	want := asked(at)
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
	for name, err := range map[string]error{
		"the hub cannot be reached":                    errors.New("connection refused"),
		"the hub does not know the mirror's token yet": &api.ResponseError{Status: http.StatusUnauthorized, Body: api.Error{Error: "unknown token"}},
		"the hub is busy":                              &api.ResponseError{Status: http.StatusTooManyRequests, Body: api.Error{Error: "slow down"}},
	} {
		t.Run(name, func(t *testing.T) {
			dyn, _ := marked(t, time.Now())
			hub := &fakeHub{refuseOperate: err}
			if err := newTestRelay(hub, dyn, nil).relay(t.Context(), web); err == nil {
				t.Error("no error, so no retry")
			}
			if !stillMarked(t, dyn) {
				t.Error("the mark went")
			}
		})
	}
	// An operation that waited too long is refused by the hub, which
	// decides it: asked again after the hub took it, the hub answers
	// with what it wrote (TestOperationNotAfter, hub).
	t.Run("expired", func(t *testing.T) {
		at := time.Now().Add(-time.Hour)
		dyn, _ := marked(t, at)
		hub := &fakeHub{}
		refusals := NewRefusals(time.Minute)
		if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if stillMarked(t, dyn) || len(hub.calls) != 1 || hub.calls[0] != asked(at) {
			t.Errorf("an expired operation: marked %v, calls %v, want one with its notAfter", stillMarked(t, dyn), hub.calls)
		}
		if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.Contains(fmt.Sprint(c["message"]), "k8s:alice's sync was not run") {
			t.Errorf("the condition: %v %v", c, ok)
		}
	})
	// A notAfter the hub refuses as too far ahead (its idempotency window
	// is shorter than the relay's 10 minutes) is a refusal, not a late
	// operation.
	t.Run("notAfter refused as too far", func(t *testing.T) {
		dyn, _ := marked(t, time.Now())
		hub := &fakeHub{refuseOperate: &api.ResponseError{Status: http.StatusBadRequest, Body: api.Error{Error: "notAfter: later than the window",
			Fields: []api.FieldError{{Field: "notAfter", Reason: "later than the window"}}}}}
		refusals := NewRefusals(time.Minute)
		if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.Contains(fmt.Sprint(c["message"]), "was refused: the hub refused") {
			t.Errorf("the condition: %v %v", c, ok)
		}
	})
	// A hub that cannot be asked an hour past the mark's notAfter: the
	// mark goes, and the object says the operation was not relayed.
	t.Run("given up", func(t *testing.T) {
		dyn, _ := marked(t, time.Now().Add(-2*time.Hour))
		hub := &fakeHub{refuseOperate: errors.New("connection refused")}
		refusals := NewRefusals(time.Minute)
		if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if stillMarked(t, dyn) {
			t.Error("the mark stayed")
		}
		if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.Contains(fmt.Sprint(c["message"]), "k8s:alice's sync was not relayed") {
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

// TestRelayTrustsOnlyItsWebhooksMarks: a mark is an order to ask the hub
// as someone else, so the Relay asks for none its webhook did not sign
// for that object. One the webhook admitted is asked as its user; one
// altered (another user), copied onto another object, signed with
// another key (before the mirror's token changed), or naming another
// cluster than its namespace's is dropped with a condition, nothing
// asked; one outside the mirror's namespaces is not the mirror's, and
// left as it is.
func TestRelayTrustsOnlyItsWebhooksMarks(t *testing.T) {
	t.Run("the webhook's", func(t *testing.T) {
		a, err := NewAdmission(&fakeHub{}, "me", "mirror-", WithAdmissionMarkKey(testMarks))
		if err != nil {
			t.Fatal(err)
		}
		dyn, _ := marked(t, time.Now())
		obj, err := dyn.Resource(applicationGVR).Namespace("mirror-prod").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(obj.Object, "metadata", "labels", LabelRelay)
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", AnnotationRelay)
		old, _ := json.Marshal(obj.Object)
		obj.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "main"}}
		changed, _ := json.Marshal(obj.Object)
		resp := a.Review(t.Context(), &admissionv1.AdmissionRequest{UID: "r1", Name: "web", Namespace: "mirror-prod", Operation: admissionv1.Update,
			Kind:     metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
			UserInfo: authnv1.UserInfo{Username: "bob", Groups: []string{"team-b"}}, OldObject: runtime.RawExtension{Raw: old},
			Object: runtime.RawExtension{Raw: changed}})
		var patch []patchOp
		if err := json.Unmarshal(resp.Patch, &patch); !resp.Allowed || err != nil {
			t.Fatalf("the webhook's review: %+v %v", resp.Result, err)
		}
		for _, op := range patch {
			if op.Path == "/metadata/annotations/argosy.dev~1relay" {
				if err := unstructured.SetNestedField(obj.Object, op.Value, "metadata", "annotations", AnnotationRelay); err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedField(obj.Object, relayPending, "metadata", "labels", LabelRelay); err != nil {
					t.Fatal(err)
				}
			}
		}
		delete(obj.Object, "operation")
		if _, err := dyn.Resource(applicationGVR).Namespace("mirror-prod").Update(t.Context(), obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hub := &fakeHub{}
		if err := newTestRelay(hub, dyn, nil).relay(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		if len(hub.opts) != 1 || hub.opts[0].ActAs == nil || hub.opts[0].ActAs.User != "bob" || hub.opts[0].IdempotencyKey != "mirror-r1" {
			t.Errorf("the webhook's mark: calls %v %+v, want one as bob", hub.calls, hub.opts)
		}
	})
	otherKey, err := NewMarkKey([]byte("the token before"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dyn  func(t *testing.T) *dynfake.FakeDynamicClient
	}{
		{"altered: another user", func(t *testing.T) *dynfake.FakeDynamicClient {
			dyn, mark := marked(t, time.Now())
			setMark(t, dyn, "mirror-prod", strings.Replace(mark, `"user":"alice"`, `"user":"admin"`, 1))
			return dyn
		}},
		{"copied from another object", func(t *testing.T) *dynfake.FakeDynamicClient {
			_, mark := markedAs(t, time.Now(), "mirror-dev", "prod", testMarks)
			dyn, _ := marked(t, time.Now())
			setMark(t, dyn, "mirror-prod", mark)
			return dyn
		}},
		{"signed with another key", func(t *testing.T) *dynfake.FakeDynamicClient {
			dyn, _ := markedAs(t, time.Now(), "mirror-prod", "prod", otherKey)
			return dyn
		}},
		{"unsigned", func(t *testing.T) *dynfake.FakeDynamicClient {
			dyn, _ := marked(t, time.Now())
			setMark(t, dyn, "mirror-prod", `{"id":"u1","user":"admin","at":"`+time.Now().UTC().Format(time.RFC3339)+`","request":{"operation":"sync"}}`)
			return dyn
		}},
		{"another cluster than its namespace's", func(t *testing.T) *dynfake.FakeDynamicClient {
			dyn, _ := markedAs(t, time.Now(), "mirror-prod", "dev", testMarks)
			return dyn
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := tc.dyn(t)
			hub := &fakeHub{}
			refusals := NewRefusals(time.Minute)
			if err := newTestRelay(hub, dyn, refusals).relay(t.Context(), web); err != nil {
				t.Fatal(err)
			}
			if len(hub.calls) != 0 || stillMarked(t, dyn) {
				t.Errorf("asked %v, marked %v; want nothing asked, the mark dropped", hub.calls, stillMarked(t, dyn))
			}
			if c, ok := refusals.condition("mirror-prod", "web"); !ok || !strings.Contains(fmt.Sprint(c["message"]), "was not asked") {
				t.Errorf("the condition: %v %v", c, ok)
			}
		})
	}
	// Outside the mirror's namespaces: named otherwise, or, with no
	// prefix (any name is a cluster's), not labelled as the mirror's.
	for _, tc := range []struct {
		name, ns, prefix string
		unlabel          bool
	}{
		{"named otherwise", "argocd", "mirror-", false},
		{"with no prefix, a namespace not the mirror's", "prod", "", true},
		{"named as the mirror's, not labelled so", "mirror-prod", "mirror-", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn, _ := markedAs(t, time.Now(), tc.ns, "prod", testMarks)
			if tc.unlabel {
				if _, err := dyn.Resource(namespaceGVR).Patch(t.Context(), tc.ns, types.MergePatchType,
					[]byte(`{"metadata":{"labels":null}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			hub := &fakeHub{}
			r := newRelay(hub, dyn, tc.prefix, testMarks)
			if err := r.relay(t.Context(), types.NamespacedName{Namespace: tc.ns, Name: "web"}); err != nil {
				t.Fatal(err)
			}
			if len(hub.calls) != 0 || !stillMarkedIn(t, dyn, tc.ns) {
				t.Errorf("asked %v, marked %v; want nothing asked, nothing touched", hub.calls, stillMarkedIn(t, dyn, tc.ns))
			}
		})
	}
}

// setMark writes mark as ns/web's relay mark.
func setMark(t *testing.T, dyn *dynfake.FakeDynamicClient, ns, mark string) {
	t.Helper()
	obj, err := dyn.Resource(applicationGVR).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ann := obj.GetAnnotations()
	ann[AnnotationRelay] = mark
	obj.SetAnnotations(ann)
	if _, err := dyn.Resource(applicationGVR).Namespace(ns).Update(t.Context(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// FuzzMarkOpen: a mark is read from an object anyone may have written.
// Reading one never panics, and accepts only what the key signed for the
// object: whatever it accepts, signed again, is what it read.
func FuzzMarkOpen(f *testing.F) {
	signed, err := testMarks.sign(relayed{ID: "u1", User: "alice", Groups: []string{"team-a"}, At: markedAt, Cluster: "prod", Namespace: "argocd",
		Request: api.OperationRequest{Operation: "sync", Revision: "main"}, TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "mirror-prod", "web", "uid-1")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed, "uid-1")
	f.Add(`{"mark":{"id":"u1","user":"admin"},"sig":""}`, "uid-1")
	f.Add(`{}`, "")
	f.Add(`[`, "uid-1")
	f.Fuzz(func(t *testing.T, raw, uid string) {
		p, err := testMarks.open(raw, "mirror-prod", "web", uid)
		if err != nil {
			return
		}
		again, err := testMarks.sign(p, "mirror-prod", "web", uid)
		if err != nil {
			t.Fatal(err)
		}
		q, err := testMarks.open(again, "mirror-prod", "web", uid)
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("a mark accepted, signed again, reads %+v, %v; want %+v", q, err, p)
		}
		if _, err := testMarks.open(raw, "mirror-prod", "web", uid+"x"); err == nil {
			t.Fatal("a mark accepted for another object")
		}
	})
}
