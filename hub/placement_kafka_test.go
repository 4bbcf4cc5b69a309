//go:build integration

package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// appManifest is the Application web.
func appManifest() json.RawMessage {
	return json.RawMessage(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd"},
	"spec":{"project":"default","source":{"repoURL":"https://git.example/apps.git","path":"web","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`)
}

// waitPlaced waits until the placement web is on the clusters of want, in
// the states want gives.
func waitPlaced(t *testing.T, c *api.Client, want map[string]string) {
	const name = "web"
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ps, err := c.Placements(t.Context())
		got := map[string]string{}
		if err == nil {
			for _, p := range ps {
				if p.Name == name {
					for _, pc := range p.Clusters {
						got[pc.Cluster] = pc.State
					}
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("placement %s on %v (%v), want %v", name, got, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPlacementFollowsTheLabels places an Application on env=staging with
// two replicas running their placers: it reaches the staging clusters and
// no other; a cluster registered later with the label receives it; one
// relabelled away loses it (prune policy delete: a cascading delete); the
// placement's deletion removes the rest. Each change is exactly one event
// on the cluster's partition, however many replicas place, and each is
// audited.
func TestPlacementFollowsTheLabels(t *testing.T) {
	r := newRig(t, 4)
	a := r.client(r.start(hub.WithPlaceInterval(time.Second)), "root")
	b := r.client(r.start(hub.WithPlaceInterval(time.Second)), "root")
	r.register(a, "s1", map[string]string{"env": "staging"})
	r.register(a, "s2", map[string]string{"env": "staging"})
	r.register(a, "p1", map[string]string{"env": "prod"})
	if _, err := b.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=staging", Manifest: appManifest()}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, a, map[string]string{"s1": "placed", "s2": "placed"})
	// The listing gives the manifest back, for an edit to start from.
	ps, err := a.Placements(t.Context())
	if err != nil || len(ps) != 1 {
		t.Fatalf("placements %v, %v", ps, err)
	}
	var listed, applied any
	if err := json.Unmarshal(ps[0].Manifest, &listed); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(appManifest(), &applied); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(listed, applied) {
		t.Errorf("listed manifest %s, want what was applied", ps[0].Manifest)
	}
	// The brief listing counts the clusters by state instead.
	brief, err := a.PlacementStates(t.Context())
	if err != nil || len(brief) != 1 || brief[0].Clusters != nil || fmt.Sprint(brief[0].States) != "map[placed:2]" ||
		fmt.Sprint(ps[0].States) != "map[placed:2]" {
		t.Errorf("brief listing %+v (%v), full listing's states %v; want 2 placed, no clusters listed", brief, err, ps[0].States)
	}

	r.register(b, "s3", map[string]string{"env": "staging"})
	waitPlaced(t, a, map[string]string{"s1": "placed", "s2": "placed", "s3": "placed"})

	one := int64(1)
	if _, err := a.RegisterCluster(t.Context(), "s2", api.ClusterRequest{Labels: map[string]string{"env": "prod"}, ExpectedGeneration: &one}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, b, map[string]string{"s1": "placed", "s3": "placed"})

	if _, err := a.DeletePlacement(t.Context(), "argocd", "web", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, b, map[string]string{})
	time.Sleep(2 * time.Second) // the placers' next passes must find nothing to do

	type ev struct {
		cluster string
		typ     string
		cascade bool
	}
	count := map[ev]int{}
	placedIDs := map[string]bool{}
	for _, d := range r.decoded(r.records(events.TopicConfig)) {
		switch p := d.Data.(type) {
		case *schemas.ApplicationUpserted:
			count[ev{p.Cluster, "upsert", false}]++
			placedIDs[d.Event.ID()] = true
			if p.Labels[hub.LabelPlacement] != "web" {
				t.Errorf("placed Application without its placement label: %v", p.Labels)
			}
		case *schemas.ApplicationDeleted:
			count[ev{p.Cluster, "delete", p.Cascade}]++
			placedIDs[d.Event.ID()] = true
		}
	}
	want := map[ev]int{
		{"s1", "upsert", false}: 1, {"s1", "delete", true}: 1,
		{"s2", "upsert", false}: 1, {"s2", "delete", true}: 1,
		{"s3", "upsert", false}: 1, {"s3", "delete", true}: 1,
	}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("events by cluster %v, want exactly %v", count, want)
	}
	audited := map[string]bool{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Action == "placements.reconcile" {
			for _, id := range a.EventIDs {
				audited[id] = true
			}
		}
	}
	for id := range placedIDs {
		if !audited[id] {
			t.Errorf("placed event %s has no audit record", id)
		}
	}
}

// TestPlacementAuditedAsItsAuthor checks that the hub's calls placing a
// placement's Applications are audited as the person who changed the
// placement, via the placer, naming the placement change they carry out:
// alice applies, root deletes. The placement events name their author.
func TestPlacementAuditedAsItsAuthor(t *testing.T) {
	r := newRig(t, 2)
	root := r.client(r.start(hub.WithPlaceInterval(time.Second)), "root")
	alice := r.client(r.start(hub.WithPlaceInterval(time.Second)), "alice")
	r.register(root, "s1", map[string]string{"env": "staging"})
	r.register(root, "s2", map[string]string{"env": "staging"})
	if _, err := alice.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=staging", Manifest: appManifest()}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, root, map[string]string{"s1": "placed", "s2": "placed"})
	if _, err := root.DeletePlacement(t.Context(), "argocd", "web", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, root, map[string]string{})

	author := map[int64]string{}
	for _, d := range r.decoded(r.records(events.TopicPlacements)) {
		switch p := d.Data.(type) {
		case *schemas.PlacementUpserted:
			author[p.Generation] = p.Actor
		case *schemas.PlacementDeleted:
			author[p.Generation] = p.Actor
		}
	}
	if want := map[int64]string{1: "alice", 2: "root"}; fmt.Sprint(author) != fmt.Sprint(want) {
		t.Errorf("placement events' actors by generation %v, want %v", author, want)
	}
	placed := map[string]int64{} // event id: the placement generation it carries out
	for _, d := range r.decoded(r.records(events.TopicConfig)) {
		switch p := d.Data.(type) {
		case *schemas.ApplicationUpserted:
			placed[d.Event.ID()] = 1
		case *schemas.ApplicationDeleted:
			if p.Name == "web" {
				placed[d.Event.ID()] = 2
			}
		}
	}
	audited := map[string]bool{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		switch a.Action {
		case "placements.apply", "placements.delete":
			if a.Via != "" || a.Placement == nil || a.Placement.Name != "web" || author[a.Placement.Generation] != a.Actor {
				t.Errorf("%s audited as %q via %q, placement %+v; want its author and the generation it wrote", a.Action, a.Actor, a.Via, a.Placement)
			}
		case "placements.reconcile":
			for _, id := range a.EventIDs {
				audited[id] = true
				gen := placed[id]
				want := schemas.PlacementRef{Namespace: "argocd", Name: "web", Generation: gen}
				if a.Actor != author[gen] || a.Via != schemas.ViaPlacement || a.Placement == nil || *a.Placement != want {
					t.Errorf("placed event %s audited as %q via %q, placement %+v; want %q via %s, %+v",
						id, a.Actor, a.Via, a.Placement, author[gen], schemas.ViaPlacement, want)
				}
			}
		}
	}
	if len(audited) != len(placed) || len(placed) != 4 {
		t.Errorf("%d placed events audited of %d, want 4", len(audited), len(placed))
	}
}

// TestPlacementLeavesOthersAlone checks that a placement never overwrites
// an Application of the same name it does not own, shows the conflict,
// and that a cluster-scoped token may not place by selector.
func TestPlacementLeavesOthersAlone(t *testing.T) {
	r := newRig(t, 2)
	url := r.start(hub.WithPlaceInterval(time.Second))
	root := r.client(url, "root")
	r.register(root, "d1", map[string]string{"env": "dev"})
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"d1"}, Manifest: appManifest()}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := r.client(url, "dev-deployer").ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=dev", Manifest: appManifest()}, api.WriteOptions{})
	if api.StatusOf(err) != http.StatusForbidden {
		t.Errorf("a cluster-scoped deployer places = %v, want 403", err)
	}
	if _, err := root.ApplyPlacement(t.Context(), api.PlacementRequest{Selector: "env=dev", Manifest: appManifest()}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, root, map[string]string{"d1": "conflict: an Application of that name is not this placement's"})
	objs, err := root.Objects(t.Context(), "d1", api.KindApplications)
	if err != nil || len(objs) != 1 || objs[0].Generation != 1 {
		t.Errorf("d1's Application %+v, %v: want it untouched at generation 1", objs, err)
	}
}
