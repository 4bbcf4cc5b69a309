//go:build integration

package projector_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// TestFolderRebuildsWhatTheRunnerFolds folds the same log twice: once with
// the live Runner in its consumer group, and once by reading the topics
// from the start with a plain client, no group, and handing the records to
// a Folder in steps of a few records, as a rebuild from the log does. The
// two stores must hold the same rows, chains and offsets: the rebuild takes
// exactly the live projector's step. Bad records and transaction markers
// are in the log too, and pass in both.
func TestFolderRebuildsWhatTheRunnerFolds(t *testing.T) {
	r := newRig(t)
	c1, c2 := r.signers["c1"], r.signers["c2"]
	for gen := int64(1); gen <= 4; gen++ {
		up := appUpsert(t, "c1", "guestbook", gen)
		r.publish(t.Context(), r.hub, up, appUpsert(t, "c2", "guestbook", gen))
		r.publish(t.Context(), c1, appStatus(t, "c1", gen, "Progressing"), heartbeat(t, "c1", gen, "v1"),
			configApplied(t, "c1", gen, up.ID()))
		r.publish(t.Context(), c2, appStatus(t, "c2", gen, "Healthy"))
	}
	r.produce(events.TopicStatus, &kgo.Record{Key: []byte("c2"), Value: []byte("not an event")})
	r.produceCommitted(events.TopicConfig, r.signed(r.hub, appUpsert(t, "c1", "committed", 1)))
	ends := r.endOffsets(r.folded()...)
	live := r.fold()

	rebuilt := newStore(t)
	folder, err := projector.NewFolder(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(r.dec, nil) // a rebuild dead-letters nothing again
	if err != nil {
		t.Fatal(err)
	}
	recs := readFrom(t, ends)
	const size = 5
	for chunk := range slices.Chunk(recs, size) {
		var step projector.Step
		for _, rec := range chunk {
			d, err := in.Take(t.Context(), rec)
			if d == nil {
				if err != nil && !events.IsPoison(err) {
					t.Fatal(err)
				}
				step.Passed = append(step.Passed, projector.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset})
				continue
			}
			step.Events = append(step.Events, d)
		}
		if _, err := folder.Fold(t.Context(), step); err != nil {
			t.Fatal(err)
		}
		if err := folder.Commit(t.Context(), len(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	want, got := dump(t, live, ends), dump(t, rebuilt, ends)
	if len(want.Apps) == 0 || len(want.Chains) == 0 {
		t.Fatalf("nothing folded to compare: %+v", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rebuilt store differs from the live one (-live +rebuilt):\n%s", diff)
	}
}

// readFrom reads every record of the partitions in ends, from the start to
// the end, with a plain client: no consumer group.
func readFrom(t *testing.T, ends map[projector.Partition]int64) []*kgo.Record {
	t.Helper()
	parts := map[string]map[int32]kgo.Offset{}
	for p := range ends {
		if parts[p.Topic] == nil {
			parts[p.Topic] = map[int32]kgo.Offset{}
		}
		parts[p.Topic][p.Partition] = kgo.NewOffset().AtStart()
	}
	cl := kafkatest.Client(t, kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	next := map[projector.Partition]int64{}
	var out []*kgo.Record
	for !reached(next, ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read to %v of %v: %v", next, ends, ctx.Err())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			out = append(out, rec)
			next[projector.Partition{Topic: rec.Topic, Partition: rec.Partition}] = rec.Offset + 1
		})
	}
	return out
}

func reached(got, ends map[projector.Partition]int64) bool {
	for p, end := range ends {
		if got[p] < end {
			return false
		}
	}
	return true
}

// storeDump is everything a store's query side shows, and its offsets.
type storeDump struct {
	Apps     []projector.AppRow
	Clusters []projector.ClusterRow
	Audit    []projector.AuditRow
	Chains   map[projector.Partition][]projector.AuditEntry
	Offsets  map[projector.Partition]int64
}

func dump(t *testing.T, s *sqlstore.Store, ends map[projector.Partition]int64) storeDump {
	t.Helper()
	ctx := t.Context()
	d := storeDump{Chains: map[projector.Partition][]projector.AuditEntry{}}
	var err error
	if d.Apps, err = s.Apps(ctx, projector.AppFilter{}); err != nil {
		t.Fatal(err)
	}
	if d.Clusters, err = s.Clusters(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Audit, err = s.Audit(ctx, projector.AuditFilter{}); err != nil {
		t.Fatal(err)
	}
	parts, err := s.ChainPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if d.Chains[p], err = s.Chain(ctx, p, -1, 10_000); err != nil {
			t.Fatal(err)
		}
	}
	if d.Offsets, err = s.Offsets(ctx, slices.Collect(maps.Keys(ends))); err != nil {
		t.Fatal(err)
	}
	return d
}
