//go:build integration

package spoke_test

import (
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// conns counts the live connections of the Kafka clients given its hook,
// as franz-go opens and closes them.
type conns struct {
	mu   sync.Mutex
	live map[net.Conn]kgo.BrokerMetadata
}

func (c *conns) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[conn] = meta
}

func (c *conns) OnBrokerDisconnect(_ kgo.BrokerMetadata, conn net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, conn)
}

func (c *conns) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live)
}

// brokers counts the live connections to brokers the clients learned of
// from metadata, leaving out those to a seed address: franz-go sends every
// other request that may go to any broker (Metadata, which kadm's offset
// listings make each time its 5 s cache is stale) to a seed while it knows
// one broker, and so keeps one connection to the seed besides.
func (c *conns) brokers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.live {
		if m.NodeID >= 0 {
			n++
		}
	}
	return n
}

// BenchmarkAgentConnections runs 200 agents in this process, each with
// an Application applied, lets their connections settle (franz-go closes
// one idle for 20 s) and reports the connections to the broker and the
// goroutines each agent holds then, counted from franz-go's connect and
// disconnect hooks (all of them, and those to a broker rather than a seed
// address) and from runtime.NumGoroutine, and the consumer groups the
// broker holds.
//
//	go test -tags integration -run '^$' -bench BenchmarkAgentConnections -benchtime 1x ./spoke/
func BenchmarkAgentConnections(b *testing.B) {
	const agents = 200
	f := newFleet(b, 8)
	defer f.client.Close()
	c := &conns{live: map[net.Conn]kgo.BrokerMetadata{}}
	for b.Loop() {
		before := runtime.NumGoroutine()
		fl := make([]*agent, agents)
		for i := range fl {
			keys, err := spoke.GenerateKeys()
			if err != nil {
				b.Fatal(err)
			}
			fl[i] = &agent{cluster: fmt.Sprintf("conns-%03d", i), argo: &fakeArgo{applied: map[string]int64{}}}
			fl[i].run, err = spoke.New(fl[i].cluster, keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(b)), kgo.WithHooks(c)},
				fl[i].argo, noApps{}, newMemStore(), spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(30*time.Second),
				spoke.WithMeterProvider(sdkmetric.NewMeterProvider()))
			if err != nil {
				b.Fatal(err)
			}
			defer fl[i].start(b)()
			f.publish(f.prod, f.upsert(fl[i].cluster, "web", 1))
		}
		for _, a := range fl {
			for deadline := time.Now().Add(5 * time.Minute); a.argo.snapshot()["argocd/web"] != 1; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatalf("%s never applied its Application", a.cluster)
				}
			}
		}
		time.Sleep(45 * time.Second) // settle: idle connections closed
		b.ReportMetric(float64(c.count())/agents, "conns/agent")
		b.ReportMetric(float64(c.brokers())/agents, "broker-conns/agent")
		groups, err := kadm.NewClient(f.client).ListGroups(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(groups.Groups())), "groups")
		b.ReportMetric(float64(runtime.NumGoroutine()-before)/agents, "goroutines/agent")
	}
}

// TestIdleAgentHoldsOnlyItsFetchConnection: with franz-go's idle timeout
// cut to 8 s (20 s by default) and heartbeats 30 s apart, the connections
// of a settled agent to the broker close, between heartbeats, all but the
// one its fetches keep busy: the trust follower, which listed the trust
// topic's end every 5 s, held its request connection open for ever.
func TestIdleAgentHoldsOnlyItsFetchConnection(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &conns{live: map[net.Conn]kgo.BrokerMetadata{}}
	a := &agent{cluster: "idle", argo: &fakeArgo{applied: map[string]int64{}}}
	a.run, err = spoke.New(a.cluster, keys, f.hub.Public(),
		[]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t)), kgo.WithHooks(c), kgo.ConnIdleTimeout(8 * time.Second)},
		a.argo, noApps{}, newMemStore(), spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.start(t)()
	f.publish(f.prod, f.upsert(a.cluster, "web", 1))
	waitApplied(t, a, "argocd/web")
	least := c.brokers()
	for deadline := time.Now().Add(90 * time.Second); least > 1 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		least = min(least, c.brokers())
	}
	if least > 1 {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("the agent holds %d connections to the broker at least, in 90 s, want 1: %v", least, slices.Collect(maps.Values(c.live)))
	}
}
