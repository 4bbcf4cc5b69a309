package events_test

import (
	"encoding/base64"
	"testing"

	"github.com/google/uuid"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// TestNewIDs: status events get 128 random bits in 22 characters of
// base64url, every other event a UUID; no two are alike.
func TestNewIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		st, err := events.New("//argosy.dev/spoke/c1", events.TypeHeartbeat, events.Subject{Cluster: "c1"}.String(), "c1",
			schemas.Heartbeat{Cluster: "c1", AgentVersion: "v1", Mode: schemas.ModeManaged})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(st.ID())
		if len(st.ID()) != 22 || err != nil || len(raw) != 16 {
			t.Fatalf("status event id %q: want 16 bytes in 22 characters of unpadded base64url (%v)", st.ID(), err)
		}
		hub, err := events.New("//argosy.dev/hub", events.TypeClusterDeregistered, events.Subject{Cluster: "c1"}.String(), "c1",
			schemas.ClusterDeregistered{Resource: schemas.Resource{Cluster: "c1", Name: "c1", Generation: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := uuid.Parse(hub.ID()); err != nil {
			t.Fatalf("config event id %q: want a UUID: %v", hub.ID(), err)
		}
		for _, id := range []string{st.ID(), hub.ID()} {
			if seen[id] {
				t.Fatalf("id %q twice", id)
			}
			seen[id] = true
		}
	}
}
