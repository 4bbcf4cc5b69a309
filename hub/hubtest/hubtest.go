// Package hubtest runs a hub for tests on franz-go's in-memory broker
// (kfake): for tests that need a hub's API but not a real Kafka, or that
// need a broker they can make fail on cue. The hub's own guarantees are
// tested on the real broker (package hub's integration tests).
package hubtest

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/projector"
)

// Hub is a running hub on an in-memory broker.
type Hub struct {
	Broker *kfake.Cluster
	Conn   []kgo.Opt
	Topics events.Topics
	Signer *events.Signer
	URL    string
	// Admin and Viewer are bearer tokens of the hub, with those roles.
	Admin, Viewer string
	// Client is a client of the hub with the admin token.
	Client *api.Client
}

// Start starts an in-memory broker with Argosy's topics (partitions
// config partitions), then setup (to add control functions to the broker,
// say; nil for none), then a hub with an admin and a viewer token and
// opts (hub.WithReadAPI, say), and returns once it is ready. Both stop
// when the test ends. kfake keeps the producer's record time, so the hub
// is given events.AcceptCreateTime.
func Start(t testing.TB, partitions int32, setup func(*kfake.Cluster), opts ...hub.Option) *Hub {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	h := &Hub{Broker: c, Conn: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Topics: events.DefaultTopics("")}
	cl, err := kgo.NewClient(h.Conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(cl), h.Topics, events.TopicPlan(partitions, partitions), 1, 1); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(c)
	}
	if h.Signer, err = events.GenerateSigner(); err != nil {
		t.Fatal(err)
	}
	var tokens []auth.Token
	for _, tk := range []struct {
		tok  *string
		role string
	}{{&h.Admin, auth.RoleAdmin}, {&h.Viewer, auth.RoleViewer}} {
		var entry auth.Token
		if *tk.tok, entry, err = auth.NewToken(tk.role, tk.role, nil, ""); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, entry)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.New(h.Conn, h.Signer, []events.Key{events.HubAnchor("hub", h.Signer.Public())}, tokens,
		append([]hub.Option{hub.WithTopics(h.Topics), hub.WithListener(ln), hub.WithDecoderOptions(events.AcceptCreateTime())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub Run = %v", err)
		}
	})
	h.URL = "http://" + ln.Addr().String()
	WaitReady(t, h.URL)
	if h.Client, err = api.NewClient(h.URL, h.Admin, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

// WaitReady waits up to a minute for the hub at url to answer /readyz.
func WaitReady(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url + "/readyz") //nolint:noctx // a loopback probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub at %s never ready: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Do sends req with c and returns the answer, its body read and closed.
func Do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// Fold runs a projector replica on conn into store until the test ends,
// trusting anchors: for tests that read the hub's views through its read
// API.
func Fold(t testing.TB, conn []kgo.Opt, store projector.Store, anchors []events.Key, opts ...projector.Option) {
	t.Helper()
	svc, err := projector.NewService(conn, store, anchors, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("projector Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("projector Run did not return within 30 s of its context ending")
		}
	})
}
