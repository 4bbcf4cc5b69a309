//go:build integration

package spoke_test

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// TestBootstrapWithoutDesiredTopic: a deployment from before the
// desired-state topic has none. The bootstrap then applies nothing,
// records nothing (a later start with the topic bootstraps) and leaves the
// spoke's config checkpoint alone, so that the config reader reads the
// config topic's whole history instead.
func TestBootstrapWithoutDesiredTopic(t *testing.T) {
	topics := events.DefaultTopics(kafkatest.Prefix(t))
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry()), events.WithTopics(topics))
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	state := &memState{}
	handled := 0
	group := kafkatest.Prefix(t) + "spoke.c1"
	boot, err := spoke.NewBootstrap("c1", kafkatest.Client(t), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, 0, group,
		in, state, func(context.Context, *events.Decoded) error { handled++; return nil }, spoke.WithTopics(topics))
	if err != nil {
		t.Fatal(err)
	}
	n, err := boot.Run(t.Context())
	if err != nil || n != 0 {
		t.Fatalf("Run = %d, %v; want 0 objects and no error", n, err)
	}
	// Nothing recorded: no bootstrap, and no config offset (the agent
	// keeps it in its state).
	if handled != 0 || len(state.put) != 0 {
		t.Errorf("handled %d events and recorded %v, want nothing", handled, state.put)
	}
	if _, err := boot.Recover(t.Context(), 0, 10); err == nil {
		t.Error("Recover without the desired-state topic: no error")
	}
}

// memState is a StateStore in memory.
type memState struct {
	mu  sync.Mutex
	put map[string]spoke.Applied
}

func (s *memState) Get(_ context.Context, key string) (spoke.Applied, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.put[key]
	return a, ok, nil
}

func (s *memState) Put(_ context.Context, key string, a spoke.Applied) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.put == nil {
		s.put = map[string]spoke.Applied{}
	}
	s.put[key] = a
	return nil
}
