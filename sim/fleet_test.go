package sim_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
)

// TestFleetJoinsAndGoesOffline runs a fleet of three against a hub on an
// in-memory broker (kfake; argosy dev's and the benchmark's real runs are
// tested with the binaries): every cluster joins through the join flow,
// clusters go offline and come back, and the fleet stops when asked.
func TestFleetJoinsAndGoesOffline(t *testing.T) {
	h := hubtest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	createTime := events.AcceptCreateTime() // kfake keeps the producer's time
	hc := h.Client
	f, err := sim.NewFleet(sim.FleetConfig{Clusters: 3, Prefix: "t", Hub: hc, HubKey: h.Signer.Public(), Conn: h.Conn, Topics: h.Topics,
		Offline: time.Second, OfflineFor: [2]time.Duration{300 * time.Millisecond, 300 * time.Millisecond}, Heartbeat: time.Second,
		AgentOpts: []spoke.Option{spoke.WithDecoderOptions(createTime)}})
	if err != nil {
		t.Fatal(err)
	}
	fleetCtx, stopFleet := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(fleetCtx) }()

	var sawAll, sawOffline bool
	for (!sawAll || !sawOffline) && ctx.Err() == nil {
		switch n := f.Online(); {
		case n == 3:
			sawAll = true
		case n < 3 && sawAll:
			sawOffline = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	objs, err := hc.Objects(ctx, "", api.KindClusters)
	if err != nil {
		t.Fatal(err)
	}
	var joined int
	for _, o := range objs {
		if o.Labels["env"] != "" && o.Name != "" {
			joined++
		}
	}
	if joined != 3 {
		t.Errorf("%d clusters registered with labels, want 3: %+v", joined, objs)
	}
	back := false
	for ctx.Err() == nil && !back { // the one away comes back
		back = f.Online() == 3
		time.Sleep(20 * time.Millisecond)
	}
	stopFleet()
	if err := <-done; err != nil {
		t.Fatalf("fleet Run = %v", err)
	}
	if !sawAll || !sawOffline || !back || f.Online() != 0 {
		t.Errorf("saw all online %v, one offline %v, back %v; online after stopping %d", sawAll, sawOffline, back, f.Online())
	}
}

// TestFailedAgentStartsAgain fails every agent's first start (its Kafka
// client cannot be made) and checks that the fleet starts each again, as
// Kubernetes restarts a spoke's pod, rather than stopping.
func TestFailedAgentStartsAgain(t *testing.T) {
	h := hubtest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var failed atomic.Int32
	failFirst := spoke.WithClientOpts(func(name string) []kgo.Opt {
		if name == "agent" && failed.Add(1) <= 3 {
			return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck())} // refused: idempotent writes need all acks
		}
		return nil
	})
	f, err := sim.NewFleet(sim.FleetConfig{Clusters: 3, Prefix: "r", Hub: h.Client, HubKey: h.Signer.Public(), Conn: h.Conn, Topics: h.Topics,
		Heartbeat: time.Second, AgentOpts: []spoke.Option{spoke.WithDecoderOptions(events.AcceptCreateTime()), failFirst}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	fleetCtx, stop := context.WithCancel(ctx)
	go func() { done <- f.Run(fleetCtx) }()
	for f.Online() < 3 || failed.Load() < 3 {
		select {
		case err := <-done:
			t.Fatalf("fleet stopped when its agents failed: %v", err)
		case <-ctx.Done():
			t.Fatalf("%d of 3 agents online, %d starts", f.Online(), failed.Load())
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond) // online, and not failing again
	if n := f.Online(); n != 3 {
		t.Errorf("%d of 3 agents online after their restart", n)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("fleet Run = %v", err)
	}
}
