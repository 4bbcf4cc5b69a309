//go:build integration

package hub_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

// TestHubKeyRotation rotates the hub's key on the real broker, as
// docs/hub.md says to: a replica cosigning with the next key, the
// rotation signed by both keys, then a replica on the next key alone. A
// reader that pins only the first key accepts everything the hub wrote,
// including the cluster keys the successor registered; a replica still
// on the retired key refuses to write, and says what to do.
func TestHubKeyRotation(t *testing.T) {
	r := newRig(t, 1)
	first := r.signer
	firstAnchor := events.HubAnchor("hub", first.Public())
	retiredURL := r.start()
	retired := r.client(retiredURL, "root")
	r.register(retired, "before", nil)

	next, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	both, err := first.Cosigner(next)
	if err != nil {
		t.Fatal(err)
	}
	overlap := r.client(r.startAs(both, []events.Key{firstAnchor}), "root")
	if _, err := hub.RotateKey(t.Context(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, r.topics, first, next); err != nil {
		t.Fatal(err)
	}
	r.register(overlap, "during", nil)

	// The replica on the retired key notices the rotation and writes
	// nothing more; a dry run is enough to ask.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := retired.RegisterCluster(t.Context(), "late", api.ClusterRequest{}, api.WriteOptions{DryRun: true})
		var re *api.ResponseError
		if api.StatusOf(err) == http.StatusServiceUnavailable && asResponse(err, &re) && strings.Contains(re.Body.Error, "--hub-key") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica on the retired key still writes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	successor := r.client(r.startAs(next, []events.Key{events.HubAnchor("hub", next.Public()), firstAnchor}), "root")
	r.register(successor, "after", nil)
	if _, err := successor.RegisterCluster(t.Context(), "before", api.ClusterRequest{Labels: map[string]string{"moved": "yes"}}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A reader anchored at the first key alone, as every spoke and
	// projector given hub.pub is.
	keys := events.NewFollowingRegistry(firstAnchor)
	trustDec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	var published, clusterKeys []string
	for _, rec := range r.records(events.TopicTrust) {
		d, err := trustDec.Decode(t.Context(), rec)
		if err != nil {
			t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
		if err := keys.Apply(d); err != nil {
			t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
		if k, ok := d.Data.(*schemas.KeyRegistered); ok && k.Role == schemas.RoleHub {
			published = append(published, k.KeyID)
		} else if ok {
			clusterKeys = append(clusterKeys, k.Owner)
		}
	}
	keys.Advance(time.Now().Add(time.Hour))
	if !slices.Contains(published, first.KeyID()) || slices.Contains(published, next.KeyID()) {
		t.Errorf("hub keys registered on the trust topic %v: want the first %s, and not its successor %s, which the rotation names", published, first.KeyID(), next.KeyID())
	}
	if k, _ := keys.Key(first.KeyID()); k.Until.IsZero() {
		t.Error("the first key was not retired")
	}
	if k, _ := keys.Key(next.KeyID()); !k.Anchor {
		t.Error("the successor is not an anchor")
	}
	slices.Sort(clusterKeys)
	if want := []string{"after", "after", "before", "before", "during", "during"}; !slices.Equal(clusterKeys, want) {
		t.Errorf("cluster keys registered %v, want %v", clusterKeys, want)
	}
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, rec := range r.records(events.TopicConfig) {
		d, err := dec.Decode(t.Context(), rec)
		if err != nil {
			t.Fatalf("config@%d: %v", rec.Offset, err)
		}
		clusters = append(clusters, d.Subject.Cluster)
	}
	if want := []string{"before", "during", "after", "before"}; !slices.Equal(clusters, want) {
		t.Errorf("config events for %v, want %v", clusters, want)
	}

	// The replica on the retired key refuses reads too, and says it is not
	// ready, and nothing it did after the rotation is on the audit topic
	// signed by a key readers refuse: every audit record verifies.
	if _, err := retired.Whoami(t.Context()); api.StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("a read on the replica with the retired key = %v, want 503", err)
	}
	if _, err := retired.RegisterCluster(t.Context(), "late", api.ClusterRequest{}, api.WriteOptions{}); api.StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("a write on the replica with the retired key = %v, want 503", err)
	}
	if _, err := retired.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "moved=yes", Manifest: appManifest()}, api.WriteOptions{}); api.StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("a placement on the replica with the retired key = %v, want 503", err)
	}
	if resp, err := http.Get(retiredURL + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable { //nolint:noctx // loopback
		t.Errorf("the replica with the retired key is ready: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	audited := 0
	for _, rec := range r.records(events.TopicAudit) {
		if _, err := dec.Decode(t.Context(), rec); err != nil {
			t.Errorf("audit@%d is refused by readers: %v", rec.Offset, err)
		}
		audited++
	}
	if audited == 0 {
		t.Error("nothing audited")
	}
}
