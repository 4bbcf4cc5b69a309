//go:build integration

package spoke_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// TestAgentSignsInItsForm runs an agent in each signature form and reads
// its first heartbeat as the broker stored it: ce_sig and no dataschema by
// default, ce_dssematerial and a dataschema with WithSigForm(SigDSSE), for
// readers older than the compact form.
func TestAgentSignsInItsForm(t *testing.T) {
	for _, form := range []events.SigForm{events.SigCompact, events.SigDSSE} {
		t.Run(form.String(), func(t *testing.T) {
			f := newFleet(t, 2)
			defer f.client.Close()
			keys, err := spoke.GenerateKeys()
			if err != nil {
				t.Fatal(err)
			}
			a, err := spoke.New("east", keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))},
				&fakeArgo{applied: map[string]int64{}}, noApps{}, newMemStore(), spoke.WithTopics(f.topics),
				spoke.WithHeartbeatInterval(time.Second), spoke.WithSigForm(form))
			if err != nil {
				t.Fatal(err)
			}
			defer (&agent{run: a}).start(t)()
			hs := firstHeartbeat(t, f.topics[events.TopicStatus])
			_, sig := hs["ce_sig"]
			_, dsse := hs["ce_dssematerial"]
			_, schema := hs["ce_dataschema"]
			if want := form == events.SigDSSE; sig == want || dsse != want || schema != want {
				t.Errorf("heartbeat headers: ce_sig %v, ce_dssematerial %v, ce_dataschema %v; want the %s form", sig, dsse, schema, form)
			}
		})
	}
}

// firstHeartbeat returns the headers of the first heartbeat on topic.
func firstHeartbeat(t *testing.T, topic string) map[string]string {
	t.Helper()
	cl := kafkatest.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			if hs["ce_type"] == events.TypeHeartbeat {
				return hs
			}
		}
	}
	t.Fatalf("no heartbeat on %s", topic)
	return nil
}
