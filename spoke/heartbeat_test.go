package spoke_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// capture is a Publisher that keeps what it is given (a stand-in for the
// producer in a unit test of timing logic; the Kafka tests use the real one).
type capture struct {
	mu sync.Mutex
	es []*event.Event
}

func (c *capture) Publish(_ context.Context, es ...*event.Event) ([]*kgo.Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.es = append(c.es, es...)
	return nil, nil
}

func TestHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub := &capture{}
		h, err := spoke.NewHeartbeater("c1", pub,
			func() spoke.Counts {
				return spoke.Counts{Total: 2, BySync: map[string]int{"Synced": 2}, ByHealth: map[string]int{"Healthy": 1, "Degraded": 1}}
			},
			func(context.Context) (int64, int64, error) { return 42, 3, nil },
			spoke.WithAgentVersion("v1"), spoke.WithMode(schemas.ModeManaged), spoke.WithHeartbeatInterval(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		time.Sleep(95 * time.Second) // beats at 0, 30, 60 and 90 s
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(pub.es) != 4 {
			t.Fatalf("%d heartbeats in 95 s at a 30 s interval, want 4", len(pub.es))
		}
		var hb schemas.Heartbeat
		if err := json.Unmarshal(pub.es[3].Data(), &hb); err != nil {
			t.Fatal(err)
		}
		if hb.Seq != 4 || hb.Applications != 2 || hb.ConfigOffset != 42 || hb.ConfigLag != 3 || hb.ApplicationsByHealth["Degraded"] != 1 {
			t.Errorf("heartbeat %+v", hb)
		}
	})
}
