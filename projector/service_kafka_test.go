//go:build integration

package projector_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// TestServiceProjectsAndServes runs a whole projector replica as a library
// on the real broker: it learns cluster c1's key from the trust topic,
// anchored at the hub's key alone, folds c1's heartbeat, dead-letters a
// heartbeat of c2, whose key the log never registered, and serves the
// views on its read API; then it stops when its context ends.
func TestServiceProjectsAndServes(t *testing.T) {
	r := newRig(t)
	c1 := r.signers["c1"]
	reg := newEvent(t, "//argosy.dev/hub/test", events.TypeKeyRegistered, events.Subject{Cluster: "c1"},
		schemas.KeyRegistered{KeyID: c1.KeyID(), Owner: "c1", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(c1.Public())})
	r.publish(t.Context(), r.hub, reg)
	r.publish(t.Context(), c1, heartbeat(t, "c1", 7, "v1"))
	r.publish(t.Context(), r.signers["c2"], heartbeat(t, "c2", 1, "v1"))

	store := newStore(t)
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	svc, err := projector.NewService([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", r.hub.Public())},
		projector.WithTopics(r.topics), projector.WithGroup(r.topics[events.TopicConfig]+".service"),
		projector.WithReadAPI(addr, read.New(store)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()

	deadline := time.Now().Add(time.Minute)
	for {
		c, err := readtest.Get[read.Cluster](t.Context(), http.DefaultClient, "http://"+addr+"/api/v1/clusters/c1")
		if err == nil && c.Beat != nil && c.Beat.Seq == 7 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("c1's heartbeat never served: %+v, %v", c, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	letters := r.deadLetters()
	if len(letters) != 1 || headers(letters[0])[events.HeaderDLQReason] != events.ErrUnknownKey.Error() {
		t.Errorf("dead letters %d, want c2's heartbeat as unknown_key", len(letters))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil once its context ended", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context ending")
	}
}
