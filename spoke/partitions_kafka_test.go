//go:build integration

package spoke_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// TestAgentRefusesAGrownConfigTopic grows the config topic (and the
// desired-state topic with it) under an agent that has run on it: its
// cluster now maps to another partition, so the agent refuses to start,
// says why and how to grow, and applies nothing. An agent pinned to a
// partition the topic does not have is refused too. An agent starting
// afresh on the grown topics runs.
func TestAgentRefusesAGrownConfigTopic(t *testing.T) {
	f := newFleet(t, 2)
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore()
	argo := &fakeArgo{applied: map[string]int64{}}
	agent := func(store spoke.Store) *spoke.Agent {
		a, err := spoke.New("east", keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, argo, noApps{}, store,
			spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- agent(store).Run(ctx) }()
	f.publish(f.prod, f.upsert("east", "web", 1))
	applied := func() int64 { return argo.snapshot()["argocd/web"] }
	for deadline := time.Now().Add(time.Minute); applied() != 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("generation 1 never applied")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if _, err := kadm.NewClient(f.client).CreatePartitions(t.Context(), 2, f.topics[events.TopicConfig], f.topics[events.TopicDesired]); err != nil {
		t.Fatal(err)
	}
	f.publish(f.prod, f.upsert("east", "web", 2))
	runCtx, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	err = agent(store).Run(runCtx)
	if !errors.Is(err, spoke.ErrPartitionsChanged) || !strings.Contains(err.Error(), "4 partitions") || !strings.Contains(err.Error(), "2") {
		t.Fatalf("an agent over the grown topic: %v, want ErrPartitionsChanged naming both counts", err)
	}
	if applied() != 1 {
		t.Errorf("the refused agent applied generation %d", applied())
	}

	pinned, err := spoke.New("east", keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, argo, noApps{},
		newMemStore(), spoke.WithTopics(f.topics), spoke.WithPartition(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := pinned.Run(runCtx); err == nil || !strings.Contains(err.Error(), "pinned partition 4") {
		t.Errorf("an agent pinned past the topic's 4 partitions: %v, want a refusal", err)
	}

	fresh, cancelFresh := context.WithCancel(t.Context())
	go func() { done <- agent(newMemStore()).Run(fresh) }()
	time.Sleep(2 * time.Second)
	cancelFresh()
	if err := <-done; err != nil {
		t.Errorf("a new agent on the grown topic: %v", err)
	}
}
