//go:build integration

package hub_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// TestIdempotencyKeyBindsRequest checks that an Idempotency-Key names one
// request, on the real broker and across replicas, one of them started
// after the writes (as after a restart): the same request again is
// replayed; another request under the key (one more cluster, other
// clusters, another route, another placement) is a 422 naming the key,
// writes nothing and is audited; the same key is another actor's own.
func TestIdempotencyKeyBindsRequest(t *testing.T) {
	r := newRig(t, 4)
	url := r.start()
	root := r.client(url, "root")
	for _, c := range []string{"c1", "c2", "c3"} {
		r.register(root, c, map[string]string{"env": "dev"})
	}
	k1 := api.WriteOptions{IdempotencyKey: "k1"}
	apply := func(c *api.Client, clusters ...string) (*api.Result, error) {
		return c.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: clusters, Manifest: appIn("web", "default")}, k1)
	}
	first, err := apply(root, "c1", "c2")
	if err != nil {
		t.Fatal(err)
	}
	placement := func(c *api.Client, selector string) (*api.Result, error) {
		return c.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: selector, Manifest: appIn("site", "default")}, api.WriteOptions{IdempotencyKey: "k2"})
	}
	// A selector no cluster matches: the placer writes nothing for it.
	firstPlacement, err := placement(root, "env=nowhere")
	if err != nil {
		t.Fatal(err)
	}
	config, audit := len(r.records(events.TopicConfig)), len(r.records(events.TopicAudit))
	placements := len(r.records(events.TopicPlacements))

	later := r.client(r.start(), "root")
	for _, c := range []struct {
		name   string
		client *api.Client
	}{{"the replica that wrote", root}, {"a replica started after", later}} {
		again, err := apply(c.client, "c1", "c2")
		if err != nil || !again.Replayed || !cmp.Equal(again.Events, first.Events) {
			t.Errorf("%s: the same request again = %+v, %v; want the first answer, replayed", c.name, again, err)
		}
		if again, err := placement(c.client, "env=nowhere"); err != nil || !again.Replayed || !cmp.Equal(again.Events, firstPlacement.Events) {
			t.Errorf("%s: the same placement again = %+v, %v; want the first answer, replayed", c.name, again, err)
		}
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"one more cluster", func() error { _, err := apply(c.client, "c1", "c2", "c3"); return err }},
			{"one cluster fewer", func() error { _, err := apply(c.client, "c1"); return err }},
			{"other clusters", func() error { _, err := apply(c.client, "c3"); return err }},
			{"another route", func() error {
				_, err := c.client.PutRepository(t.Context(), "c1", "argocd", "apps", api.RepositoryRequest{URL: "https://git.example.com/x.git"}, k1)
				return err
			}},
			{"another placement", func() error { _, err := placement(c.client, "env=prod"); return err }},
		} {
			err := tc.do()
			var re *api.ResponseError
			if api.StatusOf(err) != http.StatusUnprocessableEntity || !asResponse(err, &re) || len(re.Body.Fields) == 0 || re.Body.Fields[0].Field != api.HeaderIdempotencyKey {
				t.Errorf("%s: %s = %v, want 422 naming %s", c.name, tc.name, err, api.HeaderIdempotencyKey)
			}
		}
	}
	if n := len(r.records(events.TopicConfig)); n != config {
		t.Errorf("the config topic went from %d to %d records", config, n)
	}
	if n := len(r.records(events.TopicPlacements)); n != placements {
		t.Errorf("the placements topic went from %d to %d records", placements, n)
	}
	refused := 0
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)[audit:]), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Outcome == "failed" && a.StatusCode == http.StatusUnprocessableEntity {
			refused++
		}
	}
	if refused != 10 {
		t.Errorf("%d refusals audited as failed with 422, want 10", refused)
	}
	// If-Match is part of what a request asks, as expectedGeneration is:
	// a delete under k3 expecting generation 1, then under k3 expecting
	// 9, is another request, not a replay of the first.
	gen := func(g int64) api.WriteOptions { return api.WriteOptions{IdempotencyKey: "k3", IfMatch: &g} }
	if _, err := root.Delete(t.Context(), api.KindApplications, "c1", "argocd", "web", true, gen(1)); err != nil {
		t.Fatal(err)
	}
	if res, err := root.Delete(t.Context(), api.KindApplications, "c1", "argocd", "web", true, gen(9)); api.StatusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("the delete under k3 again, expecting generation 9 = %+v, %v; want 422", res, err)
	}
	if res, err := root.Delete(t.Context(), api.KindApplications, "c1", "argocd", "web", true, gen(1)); err != nil || !res.Replayed {
		t.Errorf("the same delete under k3 again = %+v, %v; want it replayed", res, err)
	}
	// A placement's deletion, resent after the placement is gone, is
	// answered with the first attempt's event.
	k5 := api.WriteOptions{IdempotencyKey: "k5"}
	gone, err := root.DeletePlacement(t.Context(), "argocd", "site", k5)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := root.DeletePlacement(t.Context(), "argocd", "site", k5); err != nil || !again.Replayed || !cmp.Equal(again.Events, gone.Events) {
		t.Errorf("the placement's deletion under k5 again = %+v, %v; want the first answer, replayed", again, err)
	}
	// A deregistration's resend, after the cluster is gone, is answered
	// with the first attempt's events, not a 404.
	k4 := api.WriteOptions{IdempotencyKey: "k4"}
	first4, err := root.DeregisterCluster(t.Context(), "c2", "", k4)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := root.DeregisterCluster(t.Context(), "c2", "", k4); err != nil || !again.Replayed || !cmp.Equal(again.Events, first4.Events) {
		t.Errorf("the deregistration under k4 again = %+v, %v; want the first answer, replayed", again, err)
	}
	// Another actor's k1 is its own.
	if _, err := r.client(url, "dev-deployer").Apply(t.Context(), api.KindApplications,
		api.ApplyRequest{Clusters: []string{"c3"}, Manifest: appIn("web", "default")}, k1); err != nil {
		t.Errorf("another actor's k1: %v", err)
	}
}

// TestOperationNotAfter: an operation asked with notAfter is refused once
// that time has passed, with nothing written. Asked again under the same
// key after it passed, one the hub took in time is answered as it was,
// neither refused nor run again: a caller cut short after the hub took
// its operation learns what became of it. A notAfter beyond the
// idempotency window is refused: asked again once the window has passed,
// the operation would run twice.
func TestOperationNotAfter(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	r := newRig(t, 2)
	root := r.client(r.start(hub.WithClock(clock)), "root")
	r.twoTeams(root)
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"prod"}, Manifest: appIn("pay", "team-a")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	config := len(r.records(events.TopicConfig))
	at := clock().Add(10 * time.Minute)
	ask := func(key string, notAfter time.Time) (*api.Result, error) {
		return root.Operate(t.Context(), "prod", "argocd", "pay", api.OperationRequest{Operation: "sync", NotAfter: &notAfter},
			api.WriteOptions{IdempotencyKey: key})
	}
	first, err := ask("asked-in-time", at)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.records(events.TopicConfig)); n != config+1 {
		t.Fatalf("a sync asked in time appended %d config records, want 1", n-config)
	}
	mu.Lock()
	now = now.Add(11 * time.Minute)
	mu.Unlock()
	again, err := ask("asked-in-time", at)
	if err != nil || !again.Replayed || !cmp.Equal(again.Events, first.Events) {
		t.Errorf("the sync taken in time, asked again after its notAfter = %+v, %v; want the first answer, replayed", again, err)
	}
	var re *api.ResponseError
	if _, err := ask("asked-late", at); api.StatusOf(err) != http.StatusConflict || !asResponse(err, &re) ||
		len(re.Body.Fields) == 0 || re.Body.Fields[0].Field != "notAfter" {
		t.Errorf("a sync first asked after its notAfter = %v, want 409 naming notAfter", err)
	}
	if _, err := ask("asked-for-too-long", clock().Add(hub.DefaultIdempotencyWindow+time.Minute)); api.StatusOf(err) != http.StatusBadRequest ||
		!asResponse(err, &re) || len(re.Body.Fields) == 0 || re.Body.Fields[0].Field != "notAfter" {
		t.Errorf("a notAfter beyond the idempotency window = %v, want 400 naming notAfter", err)
	}
	if n := len(r.records(events.TopicConfig)); n != config+1 {
		t.Errorf("%d config records after the sync taken in time, want none", n-config-1)
	}
}
