//go:build integration

package projector_test

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// TestReplayedRecordsChangeNoView appends an Application's history to
// the config topic (generations 1 and 2, deleted at 3) and a sync of it;
// then whoever may append to the topic appends the captured records of
// generation 1 and of the sync again, key, value and headers as they
// were. Their signatures verify. The live projector, which reads them
// after a restart (its rows come from the store), a rebuild from the log
// and an as-of answer all still show the Application deleted at
// generation 3, and the audit history holds each replay as refused, not
// as a change.
func TestReplayedRecordsChangeNoView(t *testing.T) {
	r := newRig(t)
	r.raw = kafkatest.Client(t, events.ProducerOpts(nil)...) // clusters where the partitioner puts them, as AsOf looks for them
	r.registerKeys()
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	up1 := appUpsert(t, "c1", "web", 1)
	sync := webEvent(t, events.TypeOperationRequested, schemas.OperationRequested{Resource: webAt(1), RequestID: "r1",
		Operation: schemas.OperationSync, ExpiresAt: &expires})
	captured := r.publish(t.Context(), r.hub, up1, sync)
	r.publish(t.Context(), r.hub, appUpsert(t, "c1", "web", 2))
	del := webEvent(t, events.TypeApplicationDeleted, schemas.ApplicationDeleted{Resource: webAt(3)})
	r.publish(t.Context(), r.hub, del)
	r.publish(t.Context(), r.hub, appUpsert(t, "c1", "other", 1))

	store := newStore(t)
	group := r.topics[events.TopicConfig] + ".projector"
	foldAll := func() {
		t.Helper()
		stopped, stop := startRunner(t, r, group, store, 2)
		if err := waitCaughtUp(t.Context(), store, r.endOffsets(r.folded()...), stopped); err != nil {
			t.Fatal(err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	foldAll()
	deleted := mark()

	// The replays, on the partition the captured records were on.
	replayer := kafkatest.Client(t, events.ProducerOpts(nil)...)
	for _, rec := range captured {
		again := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
		if err := replayer.ProduceSync(t.Context(), again).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if again.Partition != rec.Partition || again.Offset <= rec.Offset {
			t.Fatalf("replay at %d@%d, want after %d@%d", again.Partition, again.Offset, rec.Partition, rec.Offset)
		}
	}
	replayed := mark()
	foldAll()

	checkViews := func(name string, s *sqlstore.Store) {
		t.Helper()
		apps, err := s.Apps(t.Context(), projector.AppFilter{Cluster: "c1", Name: "web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(apps) != 1 || apps[0].Desired == nil || !apps[0].Desired.Deleted || apps[0].Desired.Generation != 3 ||
			apps[0].Desired.EventID != del.ID() {
			t.Errorf("%s: web %+v, want deleted at generation 3 by %s", name, apps, del.ID())
		}
		audit, err := s.Audit(t.Context(), projector.AuditFilter{Cluster: "c1", Name: "web"})
		if err != nil {
			t.Fatal(err)
		}
		refused := map[string]string{}
		for _, e := range audit {
			if e.Refused != "" {
				refused[e.EventID] = e.Refused
				if e.Before != nil || e.After != nil || len(e.Results) > 0 {
					t.Errorf("%s: refused entry %+v has a change or results", name, e)
				}
			}
		}
		want := map[string]string{
			up1.ID():  "generation 1 is not newer than the object's generation 3, deleted (event " + del.ID() + ")",
			sync.ID(): "request r1 was taken before, from event " + sync.ID(),
		}
		if len(refused) != len(want) {
			t.Errorf("%s: refused entries %q, want %q", name, refused, want)
		}
		for id, reason := range want {
			if got := refused[id]; len(got) < len(reason) || got[:len(reason)] != reason {
				t.Errorf("%s: %s refused %q, want %q…", name, id, got, reason)
			}
		}
	}
	checkViews("live", store)

	// A rebuild from the log refuses the same records: the same rows.
	rebuilt := newStore(t)
	if _, err := rebuild(t, r, rebuilt, projector.From{}); err != nil {
		t.Fatal(err)
	}
	checkViews("rebuilt", rebuilt)
	diffStores(t, store, rebuilt)

	// What held on c1 is the same with the replays in the log as before
	// them: web deleted, from the deletion.
	answer := func(at time.Time) *projector.AsOfResult {
		t.Helper()
		res, err := asOf(t, r, projector.AsOfQuery{Cluster: "c1", At: at, Objects: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	before, after := answer(deleted), answer(replayed)
	same := cmpopts.IgnoreFields(projector.AsOfResult{}, "At", "Read")
	if diff := cmp.Diff(before, after, same); diff != "" {
		t.Errorf("as of after the replays (-before them +after):\n%s", diff)
	}
	for _, a := range after.Apps {
		if a.Name == "web" && (a.Desired == nil || !a.Desired.Deleted || a.DesiredFrom == nil || a.DesiredFrom.ID != del.ID()) {
			t.Errorf("as of after the replays: web %+v from %+v, want deleted by %s", a.Desired, a.DesiredFrom, del.ID())
		}
	}
	for _, ob := range after.Objects {
		if ob.Name == "web" && (!ob.Deleted || ob.Generation != 3 || ob.From.ID != del.ID()) {
			t.Errorf("as of after the replays: web's last event %+v, want the deletion %s", ob, del.ID())
		}
	}
}

// webAt is c1's Application web at generation gen.
func webAt(gen int64) schemas.Resource {
	return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: gen}
}

// webEvent is an event of the hub's about c1's Application web.
func webEvent(t *testing.T, typ string, data any) *event.Event {
	t.Helper()
	return newEvent(t, "//argosy.dev/hub/test", typ, events.Subject{Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "web"}, data)
}
