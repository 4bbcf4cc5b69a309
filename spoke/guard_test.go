package spoke_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/spoke"
)

// countingState is a StateStore in memory that counts its reads.
type countingState struct {
	mu    sync.Mutex
	recs  map[string]spoke.Applied
	reads int
}

func (s *countingState) Get(_ context.Context, key string) (spoke.Applied, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	a, ok := s.recs[key]
	return a, ok, nil
}

func (s *countingState) Put(_ context.Context, key string, a spoke.Applied) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[key] = a
	return nil
}

// reverts is a Reverter that records what it was asked to put back.
type reverts struct {
	mu   sync.Mutex
	asks []json.RawMessage
}

func (r *reverts) Revert(_ context.Context, _ spoke.Ref, desired json.RawMessage) ([]string, json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, desired)
	return []string{"spec.project"}, nil, nil
}

// TestGuardLooksUpChangedSpecsOnly feeds the guard statuses of one
// managed Application: status changes with the applied spec are looked up
// in the state once, then never again; a changed spec is looked up and
// reverted to the spec the state holds.
func TestGuardLooksUpChangedSpecsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		desired := json.RawMessage(`{"project":"default"}`)
		state := &countingState{recs: map[string]spoke.Applied{
			"Application.argocd.web": {Generation: 2, Spec: desired, SpecHash: argocd.SpecHash(desired)}}}
		rev := &reverts{}
		g, err := spoke.NewGuard("c1", rev, state, &capture{}, spoke.WithWindow(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		status := func(spec string) spoke.AppStatus {
			return spoke.AppStatus{Namespace: "argocd", Name: "web", SpecHash: argocd.SpecHash(json.RawMessage(spec))}
		}
		for range 3 { // three windows of status changes, spec in line
			g.Observe(status(string(desired)))
			g.Observe(status(string(desired)))
			time.Sleep(time.Second + time.Millisecond)
			synctest.Wait()
		}
		if state.reads != 1 || len(rev.asks) != 0 {
			t.Errorf("status changes alone: %d state reads and %d reverts, want 1 and 0", state.reads, len(rev.asks))
		}
		g.Observe(status(`{"project":"other"}`))
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if state.reads != 2 || len(rev.asks) != 1 || string(rev.asks[0]) != string(desired) {
			t.Errorf("a local edit: %d state reads, reverts %q; want 2 and the applied spec", state.reads, rev.asks)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
