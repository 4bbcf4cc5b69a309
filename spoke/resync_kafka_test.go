//go:build integration

package spoke_test

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestStatusOutlivesTheStatusTopicsRetention reports two Applications'
// statuses, then one change, and deletes the start of the status topic,
// the whole statuses sent first included, as retention does. A projector
// rebuilt from what is left must show each Application as one that read
// the whole log does: the reporter sends each whole status again at its
// resync interval.
func TestStatusOutlivesTheStatusTopicsRetention(t *testing.T) {
	f := newFleet(t, 2)
	defer f.client.Close()
	const cluster = "retained"
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := events.NewSigner(keys.Signing)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := events.NewProducer(f.client, signer, f.topics)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := spoke.NewReporter(cluster, pub, spoke.WithWindow(100*time.Millisecond), spoke.WithStatusResync(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	src, stop := runReporter(t, rep)
	app := func(name, health string) spoke.AppStatus {
		return spoke.AppStatus{Namespace: "argocd", Name: name, Generation: 3, Sync: &schemas.SyncStatus{Status: "Synced", Revision: "abc"},
			Health: &schemas.HealthStatus{Status: health}, Conditions: []schemas.Condition{{Type: "SyncError", Message: "once"}},
			Resources: &schemas.ResourceSummary{Total: 2, ByKind: map[string]int{"ConfigMap": 2}}}
	}
	src <- app("web", "Progressing")
	src <- app("db", "Healthy")
	topic := f.topics[events.TopicStatus]
	part := events.NewPartitioner(nil).PartitionOf(cluster, 2)
	first := readStatus(t, topic, part, 2) // the first whole statuses
	src <- app("web", "Healthy")           // a delta of the health alone
	time.Sleep(2500 * time.Millisecond)    // at least one resync after it
	all := readStatus(t, topic, part, 0)
	cut := first[len(first)-1].Offset + 1
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: part, At: cut, LeaderEpoch: -1})
	if resp, err := kadm.NewClient(f.client).DeleteRecords(t.Context(), os); err != nil || resp.Error() != nil {
		t.Fatalf("delete records before %d: %v %v", cut, err, resp.Error())
	}
	stop()
	rest := readStatus(t, topic, part, 0)
	if len(rest) == 0 || rest[0].Offset < cut {
		t.Fatalf("the log still starts at %v, want at %d", rest, cut)
	}
	for _, r := range rest { // what came after the first read
		if r.Offset > all[len(all)-1].Offset {
			all = append(all, r)
		}
	}
	reg := events.NewRegistry(events.Key{ID: events.KeyID(keys.Signing.Public().(ed25519.PublicKey)), Owner: cluster, Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: keys.Signing.Public().(ed25519.PublicKey)})
	live, rebuilt := foldStatus(t, reg, all), foldStatus(t, reg, rest)
	if len(live) != 2 {
		t.Fatalf("the whole log shows %d Applications, want 2: %+v", len(live), live)
	}
	if diff := cmp.Diff(live, rebuilt); diff != "" {
		t.Errorf("a view rebuilt after retention differs from one of the whole log (-whole +rebuilt):\n%s", diff)
	}
}

// readStatus reads partition p of topic from its start: at least n records,
// or, with n == 0, to its end.
func readStatus(t *testing.T, topic string, p int32, n int) []*kgo.Record {
	t.Helper()
	cl := kafkatest.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, p)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for ctx.Err() == nil {
		if n > 0 && len(out) >= n || n == 0 && len(out) > 0 && out[len(out)-1].Offset+1 >= end.Offset {
			return out
		}
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	t.Fatalf("read %d records of %s/%d, want %d (end %d)", len(out), topic, p, n, end.Offset)
	return nil
}

// foldStatus folds recs into a new store with the projector's step and
// returns the Applications it observes, by name.
func foldStatus(t *testing.T, reg *events.Registry, recs []*kgo.Record) map[string]projector.AppObserved {
	t.Helper()
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dec, err := events.NewDecoder(events.NewVerifier(reg))
	if err != nil {
		t.Fatal(err)
	}
	folder, err := projector.NewFolder(store)
	if err != nil {
		t.Fatal(err)
	}
	var step projector.Step
	for _, rec := range recs {
		d, err := dec.Decode(t.Context(), rec)
		if err != nil {
			t.Fatal(err)
		}
		step.Events = append(step.Events, d)
	}
	if _, err := folder.Fold(t.Context(), step); err != nil {
		t.Fatal(err)
	}
	if err := folder.Commit(t.Context(), len(recs)); err != nil {
		t.Fatal(err)
	}
	apps, err := store.Apps(t.Context(), projector.AppFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]projector.AppObserved{}
	for _, a := range apps {
		if a.Observed != nil {
			out[a.Name] = *a.Observed
		}
	}
	return out
}
