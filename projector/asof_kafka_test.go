//go:build integration

package projector_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// asOf asks the rig's log what held on cluster at at.
func asOf(t *testing.T, r *rig, q projector.AsOfQuery) (*projector.AsOfResult, error) {
	t.Helper()
	return projector.AsOf(t.Context(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))},
		[]events.Key{events.HubAnchor("hub", r.hub.Public())}, q, projector.WithTopics(r.topics),
		projector.WithClockMargin(100*time.Millisecond))
}

// mark returns a time after everything appended so far and before
// anything appended next: log times are in milliseconds.
func mark() time.Time {
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	return at
}

// TestAsOfFollowsAScriptedHistory appends a known sequence of changes and
// statuses for c1, with c2's records beside them on the same topics, and
// asks what held on c1 between each step: every answer is what the
// script says held then, with the events it came from.
func TestAsOfFollowsAScriptedHistory(t *testing.T) {
	r := newRig(t)
	r.raw = kafkatest.Client(t, events.ProducerOpts(nil)...) // clusters where the partitioner puts them, as in production
	r.registerKeys()
	c1, c2 := r.signers["c1"], r.signers["c2"]
	t0 := mark()
	up1, upC2 := appUpsert(t, "c1", "guestbook", 1), appUpsert(t, "c2", "guestbook", 7)
	r.publish(t.Context(), r.hub, up1, upC2)
	t1 := mark()
	status1 := appStatus(t, "c1", 1, "Progressing")
	up2 := appUpsert(t, "c1", "guestbook", 2)
	ack1 := configApplied(t, "c1", 1, up1.ID())
	r.publish(t.Context(), c1, status1, ack1)
	r.publish(t.Context(), r.hub, up2)
	r.publish(t.Context(), c2, appStatus(t, "c2", 1, "Degraded"), configApplied(t, "c2", 7, upC2.ID()))
	t2 := mark()
	status2 := appStatus(t, "c1", 2, "Healthy")
	other := appUpsert(t, "c1", "other", 1)
	r.publish(t.Context(), c1, status2)
	r.publish(t.Context(), r.hub, other)
	t3 := mark()

	if _, err := asOf(t, r, projector.AsOfQuery{Cluster: "c1", At: t0}); !errors.Is(err, projector.ErrNothingKnown) {
		t.Errorf("as of before c1's first event: %v, want ErrNothingKnown", err)
	}
	if _, err := asOf(t, r, projector.AsOfQuery{Cluster: "nope", At: t3}); !errors.Is(err, projector.ErrNothingKnown) {
		t.Errorf("as of for an unknown cluster: %v, want ErrNothingKnown", err)
	}

	type want struct {
		app           string
		generation    int64
		from          string
		health        string // "" for no status
		statusFrom    string
		appliedGen    int64
		statusPresent bool
	}
	check := func(at time.Time, q projector.AsOfQuery, wants ...want) {
		t.Helper()
		q.Cluster, q.At = "c1", at
		res, err := asOf(t, r, q)
		if err != nil {
			t.Fatalf("as of %s: %v", at.Format(time.RFC3339Nano), err)
		}
		if len(res.Apps) != len(wants) {
			t.Fatalf("as of %s: %d applications %+v, want %d", at.Format(time.RFC3339Nano), len(res.Apps), res.Apps, len(wants))
		}
		for i, w := range wants {
			a := res.Apps[i]
			if a.Name != w.app || a.Desired == nil || a.Desired.Generation != w.generation || a.DesiredFrom == nil || a.DesiredFrom.ID != w.from {
				t.Errorf("as of %s: %s desired %+v from %+v, want generation %d from %s", at.Format(time.RFC3339Nano), a.Name, a.Desired, a.DesiredFrom, w.generation, w.from)
			}
			if !w.statusPresent {
				if a.Observed != nil {
					t.Errorf("as of %s: %s observed %+v, want none", at.Format(time.RFC3339Nano), a.Name, a.Observed)
				}
				continue
			}
			if a.Observed == nil || a.Observed.Health == nil || a.Observed.Health.Status != w.health || a.Observed.AppliedGeneration != w.appliedGen ||
				a.ObservedFrom == nil || a.ObservedFrom.ID != w.statusFrom {
				t.Errorf("as of %s: %s observed %+v from %+v, want %s, applied %d, from %s", at.Format(time.RFC3339Nano), a.Name, a.Observed, a.ObservedFrom,
					w.health, w.appliedGen, w.statusFrom)
			}
		}
		for _, rg := range res.Read {
			if rg.From > rg.To || rg.Events < 0 {
				t.Errorf("read range %+v", rg)
			}
		}
	}
	check(t1, projector.AsOfQuery{}, want{app: "guestbook", generation: 1, from: up1.ID()})
	// The acknowledgement came after the status: it is the last event
	// that changed the observed row.
	check(t2, projector.AsOfQuery{}, want{app: "guestbook", generation: 2, from: up2.ID(), statusPresent: true, health: "Progressing",
		appliedGen: 1, statusFrom: ack1.ID()})
	check(t3, projector.AsOfQuery{}, want{app: "guestbook", generation: 2, from: up2.ID(), statusPresent: true, health: "Healthy",
		appliedGen: 1, statusFrom: status2.ID()},
		want{app: "other", generation: 1, from: other.ID()})
	check(t3, projector.AsOfQuery{App: "other"}, want{app: "other", generation: 1, from: other.ID()})
	// A status window that begins after c1's last status reads none of
	// it (mark slept 20 ms after t3, and nothing was appended since).
	check(t3.Add(15*time.Millisecond), projector.AsOfQuery{StatusWindow: 5 * time.Millisecond},
		want{app: "guestbook", generation: 2, from: up2.ID()}, want{app: "other", generation: 1, from: other.ID()})

	// The whole desired state, every kind, deletions included, each
	// object's last event up to the time, in config order; an operation is
	// no object's state.
	project := newEvent(t, "//argosy.dev/hub/test", events.TypeAppProjectUpserted,
		events.Subject{Cluster: "c1", Kind: "appprojects", Namespace: "argocd", Name: "web"},
		schemas.AppProjectUpserted{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1}, Spec: []byte(`{}`)})
	gone := newEvent(t, "//argosy.dev/hub/test", events.TypeApplicationDeleted,
		events.Subject{Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "other"},
		schemas.ApplicationDeleted{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "other", Generation: 2}})
	sync := newEvent(t, "//argosy.dev/hub/test", events.TypeOperationRequested,
		events.Subject{Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "guestbook"},
		schemas.OperationRequested{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "guestbook", Generation: 2},
			RequestID: "r1", Operation: schemas.OperationSync})
	c1Config := r.publish(t.Context(), r.hub, project, gone, sync)[0].Partition
	t4 := mark()
	type object struct {
		name    string
		gen     int64
		deleted bool
		from    string
	}
	objects := func(at time.Time, q projector.AsOfQuery, want ...object) {
		t.Helper()
		q.Cluster, q.At, q.Objects = "c1", at, true
		res, err := asOf(t, r, q)
		if err != nil {
			t.Fatalf("as of %s: %v", at.Format(time.RFC3339Nano), err)
		}
		var got []object
		for _, ob := range res.Objects {
			got = append(got, object{ob.Name, ob.Generation, ob.Deleted, ob.From.ID})
			if !json.Valid(ob.Data) {
				t.Errorf("object %s: data %q", ob.Name, ob.Data)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("objects as of %s: %+v, want %+v", at.Format(time.RFC3339Nano), got, want)
		}
	}
	objects(t2, projector.AsOfQuery{}, object{"guestbook", 2, false, up2.ID()})
	objects(t4, projector.AsOfQuery{}, object{"guestbook", 2, false, up2.ID()}, object{"web", 1, false, project.ID()},
		object{"other", 2, true, gone.ID()})
	objects(t4, projector.AsOfQuery{App: "other"}, object{"other", 2, true, gone.ID()})
	// An event in a transaction aborted after the time asked is no part
	// of the answer.
	txn := kafkatest.Client(t, kgo.TransactionalID("asof-test."+r.topics[events.TopicConfig]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	aborted := r.signed(r.hub, appUpsert(t, "c1", "guestbook", 3))
	aborted.Topic, aborted.Partition = r.topics[events.TopicConfig], c1Config
	if err := txn.ProduceSync(t.Context(), aborted).FirstErr(); err != nil {
		t.Fatal(err)
	}
	t5 := mark()
	if err := txn.EndTransaction(t.Context(), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	objects(t5, projector.AsOfQuery{}, object{"guestbook", 2, false, up2.ID()}, object{"web", 1, false, project.ID()},
		object{"other", 2, true, gone.ID()})
	if res, err := asOf(t, r, projector.AsOfQuery{Cluster: "c1", At: t4}); err != nil || res.Objects != nil {
		t.Errorf("as of without Objects: objects %+v, %v, want none", res.Objects, err)
	}
}
