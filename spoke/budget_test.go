package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// failingArgo fails every change with err, counting the calls.
type failingArgo struct {
	err   error
	calls int
}

func (f *failingArgo) Apply(context.Context, *spoke.Object) error { f.calls++; return f.err }
func (f *failingArgo) Delete(context.Context, spoke.Ref, bool) error {
	f.calls++
	return f.err
}
func (f *failingArgo) Operate(context.Context, spoke.Ref, spoke.Operation) error {
	f.calls++
	return f.err
}

// flakyState is a StateStore in memory whose reads fail after the first
// readable ones.
type flakyState struct {
	mu       sync.Mutex
	m        map[string]spoke.Applied
	readable int
}

func (s *flakyState) Get(_ context.Context, key string) (spoke.Applied, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readable == 0 {
		return spoke.Applied{}, false, errors.New("the API server is not answering")
	}
	s.readable--
	a, ok := s.m[key]
	return a, ok, nil
}

func (s *flakyState) Put(_ context.Context, key string, a spoke.Applied) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = a
	return nil
}

// upsertAt is a decoded Application upsert at offset 7.
func upsertAt(t *testing.T) *events.Decoded {
	t.Helper()
	res := schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1}
	e := event.New()
	e.SetID("up-1")
	sp, _ := events.Lookup(events.TypeApplicationUpserted)
	return &events.Decoded{Event: &e, Spec: sp, Data: &schemas.ApplicationUpserted{Resource: res, Project: "default",
		Spec: json.RawMessage(`{"project":"default"}`)}, Subject: events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications,
		Namespace: "argocd", Name: "web"}, Topic: "config", Partition: 0, Offset: 7}
}

// TestApplyBudget holds the applier's promise about errors that retrying
// may fix: it retries them for the apply budget and then rejects the event,
// so the partition goes on; but while the spoke cannot read its own state
// either, the API server is down, and the event waits rather than being
// rejected. An error retrying cannot fix is rejected at the first attempt.
func TestApplyBudget(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is starting")
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "nowhere")
	tests := []struct {
		name         string
		err          error
		readable     int // state reads that succeed
		wantRejected bool
		wantReason   string
		wantTook     time.Duration // at least
		wantCalls    func(int) bool
	}{
		{"transient, then the budget runs out", unavailable, 100, true, "gave up after", time.Minute, func(n int) bool { return n > 3 }},
		{"transient, and the state unreadable too", unavailable, 1, false, "", time.Minute, func(n int) bool { return n > 3 }},
		{"refused outright", notFound, 100, true, "not found", 0, func(n int) bool { return n == 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				argo, pub := &failingArgo{err: tc.err}, &capture{}
				state := &flakyState{m: map[string]spoke.Applied{}, readable: tc.readable}
				a, err := spoke.NewApplier("c1", argo, state, pub, events.SealingKey{}, spoke.WithApplyBudget(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				err = a.Handle(t.Context(), upsertAt(t))
				if took := time.Since(start); took < tc.wantTook {
					t.Errorf("gave up after %s, want at least %s", took, tc.wantTook)
				}
				if !tc.wantCalls(argo.calls) {
					t.Errorf("%d attempts", argo.calls)
				}
				if got := events.IsPoison(err); got != tc.wantRejected {
					t.Fatalf("Handle = %v: rejected %v, want %v", err, got, tc.wantRejected)
				}
				var rejections []string
				for _, e := range pub.es {
					var r schemas.ConfigRejected
					if e.Type() == events.TypeConfigRejected && json.Unmarshal(e.Data(), &r) == nil {
						rejections = append(rejections, r.Code+": "+r.Reason)
					}
				}
				switch {
				case !tc.wantRejected && len(rejections) != 0:
					t.Errorf("rejected %v while the API server was down", rejections)
				case tc.wantRejected && (len(rejections) != 1 || !strings.Contains(rejections[0], schemas.RejectApplyFailed+": ") ||
					!strings.Contains(rejections[0], tc.wantReason)):
					t.Errorf("rejections %v, want one %s naming %q", rejections, schemas.RejectApplyFailed, tc.wantReason)
				}
			})
		})
	}
}
