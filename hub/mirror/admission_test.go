package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argosyproj/argosy/hub/api"
)

// fakeHub records the hub calls the webhook makes, and refuses them all
// with refuse when it is set.
type fakeHub struct {
	calls  []string
	opts   []api.WriteOptions
	refuse error
	// refuseOperate, when set, refuses the operations alone.
	refuseOperate error
	// hang makes the operations wait until their context ends.
	hang bool
}

func (f *fakeHub) Apply(_ context.Context, kind string, req api.ApplyRequest, o api.WriteOptions) (*api.Result, error) {
	exp := "-"
	if req.ExpectedGeneration != nil {
		exp = fmt.Sprint(*req.ExpectedGeneration)
	}
	f.calls, f.opts = append(f.calls, fmt.Sprintf("apply %s %v gen=%s %s", kind, req.Clusters, exp, req.Manifest)), append(f.opts, o)
	return &api.Result{}, f.refuse
}

func (f *fakeHub) Delete(_ context.Context, kind, cluster, namespace, name string, cascade bool, o api.WriteOptions) (*api.Result, error) {
	f.calls, f.opts = append(f.calls, fmt.Sprintf("delete %s %s %s/%s cascade=%v", kind, cluster, namespace, name, cascade)), append(f.opts, o)
	return &api.Result{}, f.refuse
}

func (f *fakeHub) Operate(ctx context.Context, cluster, namespace, name string, req api.OperationRequest, o api.WriteOptions) (*api.Result, error) {
	if f.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	b, _ := json.Marshal(req)
	f.calls, f.opts = append(f.calls, fmt.Sprintf("operate %s %s/%s %s", cluster, namespace, name, b)), append(f.opts, o)
	if f.refuseOperate != nil {
		return nil, f.refuseOperate
	}
	if req.NotAfter != nil && time.Now().After(*req.NotAfter) { // as the hub answers a request first asked late
		return nil, &api.ResponseError{Status: http.StatusConflict, Body: api.Error{Error: "notAfter: passed",
			Fields: []api.FieldError{{Field: "notAfter", Reason: "passed"}}}}
	}
	return &api.Result{}, f.refuse
}

// mirrored is an Application as the mirror wrote it for cluster prod,
// with extra merged into it (a nil value removes a key).
func mirrored(extra string) runtime.RawExtension {
	base := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application",
	"metadata":{"name":"web","namespace":"mirror-prod","labels":{"app.kubernetes.io/managed-by":"argosy-mirror","argosy.dev/cluster":"prod","tier":"front"},
	"annotations":{"argosy.dev/namespace":"argocd","argosy.dev/owner":"hub","argosy.dev/generation":"4","argocd.argoproj.io/skip-reconcile":"true"}},
	"spec":{"project":"default","source":{"repoURL":"https://git.example/web","path":"web","targetRevision":"main"}},
	"status":{"operationState":{"phase":"Running"},"history":[{"id":2,"revision":"aaa"},{"id":3,"revision":"bbb"}]}}`
	var obj map[string]any
	if err := json.Unmarshal([]byte(base), &obj); err != nil {
		panic(err)
	}
	if extra != "" {
		var patch map[string]any
		if err := json.Unmarshal([]byte(extra), &patch); err != nil {
			panic(err)
		}
		merge(obj, patch)
	}
	b, _ := json.Marshal(obj)
	return runtime.RawExtension{Raw: b}
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// markedAt is when the webhook's clock says it marks an operation to
// relay.
var markedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testMarks is the marks' key of the tests' webhooks and Relays.
var testMarks = func() *MarkKey {
	k, err := NewMarkKey([]byte("the mirror's token"))
	if err != nil {
		panic(err)
	}
	return k
}()

// mark is the patch, after a comma, of the relay's marks of alice's
// operation req, admitted in review u1 at markedAt on mirror-prod/web.
func mark(t *testing.T, req string) string {
	t.Helper()
	var r api.OperationRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	signed, err := testMarks.sign(relayed{ID: "u1", User: "alice", Groups: []string{"team-a", "system:authenticated"}, At: markedAt,
		Cluster: "prod", Namespace: "argocd", Request: r},
		"mirror-prod", "web", "")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(signed)
	return `,{"op":"add","path":"/metadata/labels/argosy.dev~1relay","value":"pending"},{"op":"add","path":"/metadata/annotations/argosy.dev~1relay","value":` + string(a) + `}`
}

// TestAdmissionRelays holds each change the webhook relays to the hub
// call it makes, as the user who made it, and the patch that takes off
// the object what the cluster carries out.
func TestAdmissionRelays(t *testing.T) {
	const self = "system:serviceaccount:argosy:argosy-mirror"
	alice := authnv1.UserInfo{Username: "alice", Groups: []string{"team-a", "system:authenticated"}}
	update := func(oldExtra, newExtra string) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{UID: "u1", Kind: metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
			Name: "web", Namespace: "mirror-prod", Operation: admissionv1.Update, UserInfo: alice,
			OldObject: mirrored(oldExtra), Object: mirrored(newExtra)}
	}
	del := func(extra string, user authnv1.UserInfo) *admissionv1.AdmissionRequest {
		r := update(extra, "")
		r.Operation, r.Object, r.UserInfo = admissionv1.Delete, runtime.RawExtension{}, user
		return r
	}
	create := update("", `{"metadata":{"labels":null,"annotations":null,"namespace":"mirror-prod"},"status":null}`)
	create.Operation, create.OldObject = admissionv1.Create, runtime.RawExtension{}
	// A new Application that carries the mirror's marks, a relay's among
	// them, as if the webhook had admitted a sync on it as admin.
	forged := update("", `{"metadata":{"labels":{"argosy.dev/relay":"pending","argosy.dev/cluster":"dev"},`+
		`"annotations":{"argosy.dev/relay":"{\"id\":\"u0\",\"user\":\"admin\"}","argosy.dev/namespace":"kube-system","argosy.dev/owner":"spoke",`+
		`"argosy.dev/generation":null,"argocd.argoproj.io/skip-reconcile":null}},"status":null}`)
	forged.Operation, forged.OldObject = admissionv1.Create, runtime.RawExtension{}
	dry := update("", `{"operation":{"sync":{}}}`)
	dry.DryRun = new(bool)
	*dry.DryRun = true
	mine := update("", `{"spec":{"project":"other"}}`)
	mine.UserInfo = authnv1.UserInfo{Username: self}
	web := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"labels":{"tier":"front"},"name":"web","namespace":"argocd"},` +
		`"spec":{"project":"default","source":{"path":"web","repoURL":"https://git.example/web","targetRevision":"v2"}}}`
	for _, tc := range []struct {
		name  string
		req   *admissionv1.AdmissionRequest
		calls []string
		patch string
	}{
		{"the mirror's own write", mine, nil, ""},
		{"the namespace controller's delete", del("", authnv1.UserInfo{Username: namespaceController}), nil, ""},
		{"sync: asked as a dry run, marked to relay", update("", `{"operation":{"sync":{"revision":"ccc","prune":true},"initiatedBy":{"username":"alice"}}}`),
			[]string{`operate prod argocd/web {"operation":"sync","revision":"ccc","prune":true}`},
			`[{"op":"remove","path":"/operation","value":null}` + mark(t, `{"operation":"sync","revision":"ccc","prune":true}`) + `]`},
		{"rollback: a sync to a history entry's revision and source", update("", `{"operation":{"sync":{"revision":"aaa","source":{"repoURL":"x"}}}}`),
			[]string{`operate prod argocd/web {"operation":"rollback","historyId":2}`},
			`[{"op":"remove","path":"/operation","value":null}` + mark(t, `{"operation":"rollback","historyId":2}`) + `]`},
		{"the relay's marks stay the webhook's", update(`{"metadata":{"labels":{"argosy.dev/relay":"pending"},"annotations":{"argosy.dev/relay":"{}"}}}`,
			`{"metadata":{"labels":{"argosy.dev/relay":null},"annotations":{"argosy.dev/relay":"{\"id\":\"forged\"}"}}}`), nil,
			`[{"op":"add","path":"/metadata/labels/argosy.dev~1relay","value":"pending"},{"op":"add","path":"/metadata/annotations/argosy.dev~1relay","value":"{}"}]`},
		{"a mark added to an object that had none is taken off", update("",
			`{"metadata":{"labels":{"argosy.dev/relay":"pending"},"annotations":{"argosy.dev/relay":"{\"mark\":{},\"sig\":\"x\"}"}}}`), nil,
			`[{"op":"remove","path":"/metadata/labels/argosy.dev~1relay","value":null},{"op":"remove","path":"/metadata/annotations/argosy.dev~1relay","value":null}]`},
		{"hard refresh", update("", `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`),
			[]string{`operate prod argocd/web {"operation":"refresh","refreshType":"hard"}`},
			`[{"op":"remove","path":"/metadata/annotations/argocd.argoproj.io~1refresh","value":null}]`},
		{"terminate", update("", `{"status":{"operationState":{"phase":"Terminating"}}}`),
			[]string{`operate prod argocd/web {"operation":"terminate"}`}, `[{"op":"replace","path":"/status/operationState/phase","value":"Running"}]`},
		{"spec edit", update("", `{"spec":{"source":{"targetRevision":"v2"}}}`),
			[]string{"apply applications [prod] gen=4 " + web}, ""},
		{"spec edit while a sync waits: the relay's label is not the hub's", update(`{"metadata":{"labels":{"argosy.dev/relay":"pending"}}}`,
			`{"metadata":{"labels":{"argosy.dev/relay":"pending"}},"spec":{"source":{"targetRevision":"v2"}}}`),
			[]string{"apply applications [prod] gen=4 " + web}, ""},
		{"a cascading delete's finalizer, then the delete", update("", `{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io/foreground"]}}`),
			nil, `[{"op":"replace","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/annotations/argosy.dev~1delete-cascade","value":"true"}]`},
		{"cascading delete", del(`{"metadata":{"annotations":{"argosy.dev/delete-cascade":"true"}}}`, alice),
			[]string{"delete applications prod argocd/web cascade=true"}, ""},
		{"delete", del("", alice), []string{"delete applications prod argocd/web cascade=false"}, ""},
		{"create", create, []string{"apply applications [prod] gen=0 " + strings.Replace(strings.Replace(web, `"labels":{"tier":"front"},`, "", 1), "v2", "main", 1)},
			`[{"op":"add","path":"/metadata/labels","value":{"app.kubernetes.io/managed-by":"argosy-mirror","argosy.dev/cluster":"prod"}},` +
				`{"op":"add","path":"/metadata/annotations","value":{"argocd.argoproj.io/skip-reconcile":"true","argosy.dev/namespace":"argocd"}}]`},
		{"create with the mirror's marks: they are the mirror's", forged, []string{"apply applications [prod] gen=0 " + strings.Replace(web, "v2", "main", 1)},
			`[{"op":"add","path":"/metadata/labels/app.kubernetes.io~1managed-by","value":"argosy-mirror"},` +
				`{"op":"add","path":"/metadata/labels/argosy.dev~1cluster","value":"prod"},` +
				`{"op":"add","path":"/metadata/annotations/argocd.argoproj.io~1skip-reconcile","value":"true"},` +
				`{"op":"add","path":"/metadata/annotations/argosy.dev~1namespace","value":"argocd"},` +
				`{"op":"remove","path":"/metadata/labels/argosy.dev~1relay","value":null},` +
				`{"op":"remove","path":"/metadata/annotations/argosy.dev~1relay","value":null},` +
				`{"op":"remove","path":"/metadata/annotations/argosy.dev~1owner","value":null}]`},
		{"dry run", dry, []string{`operate prod argocd/web {"operation":"sync"}`}, `[{"op":"remove","path":"/operation","value":null}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := &fakeHub{}
			a, err := NewAdmission(hub, self, "mirror-", WithAdmissionMarkKey(testMarks))
			if err != nil {
				t.Fatal(err)
			}
			a.now = func() time.Time { return markedAt }
			resp := a.Review(t.Context(), tc.req)
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if diff := cmp.Diff(tc.calls, hub.calls); diff != "" {
				t.Errorf("hub calls (-want +got):\n%s", diff)
			}
			for i, o := range hub.opts {
				// A sync or rollback is only asked whether the hub would
				// take it; the Relay asks for it.
				deferred := strings.Contains(hub.calls[i], `"operation":"sync"`) || strings.Contains(hub.calls[i], `"operation":"rollback"`)
				if o.ActAs == nil || o.ActAs.User != tc.req.UserInfo.Username || !cmp.Equal(o.ActAs.Groups, tc.req.UserInfo.Groups) ||
					(!deferred && (!strings.HasPrefix(o.IdempotencyKey, "mirror-u1") || o.DryRun != (tc.req.DryRun != nil))) ||
					(deferred && (o.IdempotencyKey != "" || !o.DryRun)) {
					t.Errorf("call options %+v %+v, want as %s, keyed by the request, dry run %v", o, o.ActAs, tc.req.UserInfo.Username, tc.req.DryRun != nil)
				}
			}
			if string(resp.Patch) != tc.patch {
				t.Errorf("patch %s\nwant  %s", resp.Patch, tc.patch)
			}
		})
	}
}

// TestAdmissionRefuses: the hub's refusal is the admission's, with its
// status and words; an Application its cluster owns is refused without
// a call; what is not a mirrored Application is refused as bad.
func TestAdmissionRefuses(t *testing.T) {
	req := func(owner string, kind string) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{UID: "u2", Kind: metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: kind},
			Name: "web", Namespace: "mirror-prod", Operation: admissionv1.Update, UserInfo: authnv1.UserInfo{Username: "bob"},
			OldObject: mirrored(`{"metadata":{"annotations":{"argosy.dev/owner":"` + owner + `"}}}`),
			Object:    mirrored(`{"metadata":{"annotations":{"argosy.dev/owner":"` + owner + `"}},"operation":{"sync":{}}}`)}
	}
	hub := &fakeHub{refuse: &api.ResponseError{Status: http.StatusForbidden, Body: api.Error{Error: "denied: k8s:bob may not applications.operate", Hint: "ask for a grant"}}}
	refusals := NewRefusals(time.Minute)
	a, err := NewAdmission(hub, "me", "mirror-", WithAdmissionRefusals(refusals), WithAdmissionMarkKey(testMarks))
	if err != nil {
		t.Fatal(err)
	}
	resp := a.Review(t.Context(), req("hub", "Application"))
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, "k8s:bob may not applications.operate") ||
		!strings.Contains(resp.Result.Message, "cluster prod") || !strings.Contains(resp.Result.Message, "ask for a grant") {
		t.Errorf("a call the hub refused: %+v", resp.Result)
	}
	// The mirror writes why on the object.
	if c, ok := refusals.condition("mirror-prod", "web"); !ok ||
		!strings.HasPrefix(fmt.Sprint(c["message"]), "k8s:bob's sync was refused: the hub refused the change of argocd/web on cluster prod") {
		t.Errorf("the refusal's condition: %v %v", c, ok)
	}
	hub.calls = nil
	if resp := a.Review(t.Context(), req("spoke", "Application")); resp.Allowed || resp.Result.Code != http.StatusForbidden ||
		!strings.Contains(resp.Result.Message, "autonomous") || len(hub.calls) != 0 {
		t.Errorf("a spoke-owned Application: %+v, calls %v", resp.Result, hub.calls)
	}
	if resp := a.Review(t.Context(), req("hub", "AppProject")); resp.Allowed || resp.Result.Code != http.StatusBadRequest || len(hub.calls) != 0 {
		t.Errorf("an AppProject: %+v, calls %v", resp.Result, hub.calls)
	}
	// A sync while the one asked before still waits to be relayed: its
	// mark would be written over, and it never relayed. A mark this
	// webhook did not sign, or one older than the hub would take, waits
	// for nothing: the sync is admitted, and marked in its place.
	hub.refuse = nil
	waitingOn := func(at time.Time, key *MarkKey) *admissionv1.AdmissionRequest {
		m, err := key.sign(relayed{ID: "u0", User: "carol", At: at, Cluster: "prod", Namespace: "argocd", Request: api.OperationRequest{Operation: "sync"}},
			"mirror-prod", "web", "")
		if err != nil {
			t.Fatal(err)
		}
		marks, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{LabelRelay: relayPending},
			"annotations": map[string]any{AnnotationRelay: m}}})
		r := req("hub", "Application")
		r.OldObject = mirrored(string(marks))
		r.Object = mirrored(strings.TrimSuffix(string(marks), "}") + `,"operation":{"sync":{}}}`)
		return r
	}
	if resp := a.Review(t.Context(), waitingOn(time.Now(), testMarks)); resp.Allowed || resp.Result.Code != http.StatusConflict ||
		!strings.Contains(resp.Result.Message, "still being relayed") || len(hub.calls) != 0 {
		t.Errorf("a sync while another waits to be relayed: %+v, calls %v", resp.Result, hub.calls)
	}
	otherKey, _ := NewMarkKey([]byte("another token"))
	for name, r := range map[string]*admissionv1.AdmissionRequest{
		"a mark signed with another key":  waitingOn(time.Now(), otherKey),
		"a mark older than the hub takes": waitingOn(time.Now().Add(-relayMaxAge-time.Minute), testMarks),
	} {
		hub.calls = nil
		if resp := a.Review(t.Context(), r); !resp.Allowed || len(hub.calls) != 1 || !strings.Contains(string(resp.Patch), `\"id\":\"u2\"`) {
			t.Errorf("a sync on %s: %+v, calls %v, patch %s; want admitted and marked", name, resp.Result, hub.calls, resp.Patch)
		}
	}
	hub.refuse = &api.ResponseError{Status: http.StatusForbidden, Body: api.Error{Error: "denied"}}
	hub.calls = nil
	// A webhook with no Relay's key admits no sync: none would be asked.
	keyless, err := NewAdmission(&fakeHub{}, "me", "mirror-")
	if err != nil {
		t.Fatal(err)
	}
	if resp := keyless.Review(t.Context(), req("hub", "Application")); resp.Allowed || resp.Result.Code != http.StatusInternalServerError ||
		!strings.Contains(resp.Result.Message, "without its Relay") {
		t.Errorf("a sync through a webhook with no Relay's key: %+v", resp.Result)
	}
	hub.refuse = fmt.Errorf("connection refused")
	if resp := a.Review(t.Context(), req("hub", "Application")); resp.Allowed || resp.Result.Code != http.StatusBadGateway {
		t.Errorf("a hub that cannot be reached: %+v", resp.Result)
	}

	// The mirror's marks are the mirror's: moved to another cluster, or
	// opened to the mirror cluster's controller, the change is refused
	// and nothing is relayed.
	hub.refuse, hub.calls = nil, nil
	for name, extra := range map[string]string{
		"another cluster":     `{"metadata":{"labels":{"argosy.dev/cluster":"dev"}},"operation":{"sync":{}}}`,
		"another namespace":   `{"metadata":{"annotations":{"argosy.dev/namespace":"kube-system"}}}`,
		"skip-reconcile gone": `{"metadata":{"annotations":{"argocd.argoproj.io/skip-reconcile":null}}}`,
		"managed-by gone":     `{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}`,
	} {
		moved := req("hub", "Application")
		moved.Object = mirrored(extra)
		if resp := a.Review(t.Context(), moved); resp.Allowed || !strings.Contains(resp.Result.Message, "only the mirror changes it") || len(hub.calls) != 0 {
			t.Errorf("%s: %+v, calls %v; want refused, nothing relayed", name, resp.Result, hub.calls)
		}
	}
	// A label of one's own is admitted, and reaches no cluster.
	own := req("hub", "Application")
	own.Object = mirrored(`{"metadata":{"labels":{"team":"shop"}}}`)
	if resp := a.Review(t.Context(), own); !resp.Allowed || len(hub.calls) != 0 {
		t.Errorf("a label of one's own: %+v, calls %v", resp.Result, hub.calls)
	}

	// A spec edit and a sync in one change: the hub takes the spec and
	// refuses the sync. The refusal says the spec holds.
	hub.refuse, hub.calls = nil, nil
	hub.refuseOperate = &api.ResponseError{Status: http.StatusForbidden, Body: api.Error{Error: "denied: a sync window is closed"}}
	both := req("hub", "Application")
	both.Object = mirrored(`{"spec":{"revisionHistoryLimit":3},"operation":{"sync":{}}}`)
	resp = a.Review(t.Context(), both)
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || len(hub.calls) != 2 ||
		!strings.HasPrefix(resp.Result.Message, "the spec edit was applied") || !strings.Contains(resp.Result.Message, "a sync window is closed") {
		t.Errorf("a spec edit applied and a sync refused: %+v, calls %v", resp.Result, hub.calls)
	}
	// As a dry run nothing was applied, and the refusal says no more.
	hub.calls = nil
	dry := true
	both.DryRun = &dry
	if resp := a.Review(t.Context(), both); resp.Allowed || strings.Contains(resp.Result.Message, "was applied") {
		t.Errorf("a dry run of both: %+v", resp.Result)
	}
}

// TestAdmissionServesReviews answers an AdmissionReview over HTTP with
// the request's uid, and refuses what is not one.
func TestAdmissionServesReviews(t *testing.T) {
	a, err := NewAdmission(&fakeHub{}, "me", "mirror-")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u3", Kind: metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
			Operation: admissionv1.Update, UserInfo: authnv1.UserInfo{Username: "me"}}}
	b, _ := json.Marshal(review)
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Response == nil || got.Response.UID != "u3" || !got.Response.Allowed || got.Request != nil || got.Kind != "AdmissionReview" {
		t.Errorf("review answered %+v", got)
	}
	bad, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"kind":"AdmissionReview"}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("a review with no request: %d, want 400", bad.StatusCode)
	}
}

// TestAdmissionKeysTheChange: the API server reviews one change again,
// with a new uid, when its write conflicts; a spec edit or a delete is
// keyed by what it changes, so that the hub answers the second review
// with what the first wrote, rather than refusing it as stale.
func TestAdmissionKeysTheChange(t *testing.T) {
	review := func(uid, gen, edit string, op admissionv1.Operation) string {
		hub := &fakeHub{}
		a, err := NewAdmission(hub, "me", "mirror-")
		if err != nil {
			t.Fatal(err)
		}
		at := `{"metadata":{"uid":"obj-1","annotations":{"argosy.dev/generation":"` + gen + `"}}`
		req := &admissionv1.AdmissionRequest{UID: types.UID(uid), Kind: metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
			Name: "web", Namespace: "mirror-prod", Operation: op, UserInfo: authnv1.UserInfo{Username: "alice"},
			OldObject: mirrored(at + "}"), Object: mirrored(at + `,"spec":{"source":{"targetRevision":"` + edit + `"}}}`)}
		if op == admissionv1.Delete {
			req.Object = runtime.RawExtension{}
		}
		if resp := a.Review(t.Context(), req); !resp.Allowed || len(hub.opts) != 1 {
			t.Fatalf("review %s: %+v, %d calls", uid, resp.Result, len(hub.opts))
		}
		return hub.opts[0].IdempotencyKey
	}
	first := review("u1", "4", "v2", admissionv1.Update)
	if again := review("u2", "4", "v2", admissionv1.Update); again != first || !strings.HasPrefix(first, "mirror-spec-") {
		t.Errorf("one edit reviewed twice: keys %q and %q, want one, of the change", first, again)
	}
	if other := review("u3", "4", "v3", admissionv1.Update); other == first {
		t.Error("another edit has the first one's key")
	}
	if later := review("u4", "5", "v2", admissionv1.Update); later == first {
		t.Error("the same edit at a later generation has the first one's key")
	}
	del := review("u5", "4", "", admissionv1.Delete)
	if again := review("u6", "4", "", admissionv1.Delete); again != del || del == first || !strings.HasPrefix(del, "mirror-delete-") {
		t.Errorf("one delete reviewed twice: keys %q and %q, want one, not the edit's", del, again)
	}
}
