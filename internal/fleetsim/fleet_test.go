package fleetsim_test

import (
	"context"
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
	"github.com/argosyproj/argosy/internal/fleetsim"
	"github.com/argosyproj/argosy/spoke"
)

// TestFleetJoinsAndGoesOffline runs a fleet of three against a hub on an
// in-memory broker (kfake; argosy dev's and the benchmark's real runs are
// tested with the binaries): every cluster joins through the join flow,
// clusters go offline and come back, and the fleet stops when asked.
func TestFleetJoinsAndGoesOffline(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	topics := events.DefaultTopics("")
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := events.EnsureTopics(ctx, kadm.NewClient(cl), topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	tok, entry, err := hub.NewToken("admin", hub.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	createTime := events.AcceptCreateTime() // kfake keeps the producer's time
	srv, err := hub.New(conn, signer, []events.Key{events.HubAnchor("hub", signer.Public())}, []hub.Token{entry}, hub.WithTopics(topics),
		hub.WithListener(ln), hub.WithDecoderOptions(createTime))
	if err != nil {
		t.Fatal(err)
	}
	hubCtx, stopHub := context.WithCancel(ctx)
	hubDone := make(chan error, 1)
	go func() { hubDone <- srv.Run(hubCtx) }()
	defer func() {
		stopHub()
		if err := <-hubDone; err != nil {
			t.Errorf("hub: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/readyz") //nolint:noctx // a loopback probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub never got ready")
		}
	}
	hc, err := api.NewClient(url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleetsim.New(fleetsim.Config{Clusters: 3, Prefix: "t", Hub: hc, HubKey: signer.Public(), Conn: conn, Topics: topics,
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
