package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/argosyproj/argosy/spoke"
)

// Store keeps an agent's state (spoke.Store and spoke.Pruner) in memory.
// It is safe for concurrent use; MarshalJSON and UnmarshalJSON carry it
// across restarts.
type Store struct {
	mu      sync.Mutex
	applied map[string]spoke.Applied
	marks   map[string]spoke.DeployMark
}

var (
	_ spoke.Store          = (*Store)(nil)
	_ spoke.Pruner         = (*Store)(nil)
	_ spoke.OperationStore = (*Store)(nil)
)

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{applied: map[string]spoke.Applied{}, marks: map[string]spoke.DeployMark{}}
}

// Get implements spoke.StateStore.
func (s *Store) Get(_ context.Context, key string) (spoke.Applied, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.applied[key]
	return a, ok, nil
}

// Put implements spoke.StateStore.
func (s *Store) Put(_ context.Context, key string, a spoke.Applied) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied[key] = a
	return nil
}

// Swap implements spoke.OperationStore.
func (s *Store) Swap(_ context.Context, key string, a spoke.Applied, was func(cur spoke.Applied, found bool) bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, found := s.applied[key]
	if !was(cur, found) {
		return false, nil
	}
	s.applied[key] = a
	return true, nil
}

// Prune implements spoke.Pruner.
func (s *Store) Prune(_ context.Context, forget func(key string, a spoke.Applied) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, a := range s.applied {
		if a.Transient && forget(k, a) {
			delete(s.applied, k)
			n++
		}
	}
	return n, nil
}

// OpenOperations implements spoke.OperationStore.
func (s *Store) OpenOperations(context.Context) (map[string]spoke.Applied, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]spoke.Applied{}
	for k, a := range s.applied {
		if a.Phase == spoke.OperationQueued || a.Phase == spoke.OperationStarted {
			out[k] = a
		}
	}
	return out, nil
}

// Marks implements spoke.MarkStore.
func (s *Store) Marks(context.Context) (map[string]spoke.DeployMark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.marks), nil
}

// SaveMarks implements spoke.MarkStore.
func (s *Store) SaveMarks(_ context.Context, set map[string]spoke.DeployMark, remove []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.marks, set)
	for _, k := range remove {
		delete(s.marks, k)
	}
	return nil
}

type storeSnapshot struct {
	Applied map[string]spoke.Applied    `json:"applied"`
	Marks   map[string]spoke.DeployMark `json:"marks"`
}

// MarshalJSON writes the Store's records.
func (s *Store) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(storeSnapshot{Applied: s.applied, Marks: s.marks})
}

// UnmarshalJSON replaces the Store's records with what MarshalJSON wrote.
func (s *Store) UnmarshalJSON(b []byte) error {
	var snap storeSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("sim store: %w", err)
	}
	if snap.Applied == nil {
		snap.Applied = map[string]spoke.Applied{}
	}
	if snap.Marks == nil {
		snap.Marks = map[string]spoke.DeployMark{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.marks = snap.Applied, snap.Marks
	return nil
}
