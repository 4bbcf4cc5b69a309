package sqlstore

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
)

// testBacklogs: a registered cluster's oldest pending change is its oldest
// config entry, from the offset its last heartbeat reported on, that no
// acknowledgement answers and the fold did not refuse; a cluster with none
// pending is listed with none, a deregistered cluster or one known only
// from heartbeats is not listed.
func testBacklogs(t *testing.T, b backend) {
	s := b.fresh(t)
	entry := func(topic, cluster string, off int64, ns int, refused string) projector.AuditEntry {
		return projector.AuditEntry{Topic: topic, Partition: 0, Offset: off, At: day(5, ns), EventID: topic + "/" + cluster + "/" + string(rune('a'+off)),
			Type: "io.argosy.config.application.upserted.v1", Cluster: cluster, Refused: refused, Hash: "h", PrevHash: "p"}
	}
	cfg, old := "argosy.config", "v0.argosy.config"
	// c1 has read to offset 5: 3 is below it, 5 is applied, 6 rejected,
	// 7 pending, 8 a refused replay; its entries on another topic, and the
	// API call on the audit topic, are not config changes of this log.
	audit := []projector.AuditEntry{
		entry(cfg, "c1", 3, 3, ""), entry(cfg, "c1", 5, 5, ""), entry(cfg, "c1", 6, 6, ""), entry(cfg, "c1", 7, 7, ""),
		entry(cfg, "c1", 8, 1, "a replay"), entry(old, "c1", 1, 1, ""), entry("argosy.audit", "c1", 2, 2, ""),
		// c2 has no heartbeat: everything is pending.
		entry(cfg, "c2", 10, 10, ""), entry(cfg, "c2", 11, 11, ""),
		// c3 applied everything; c4 is deregistered.
		entry(cfg, "c3", 12, 12, ""), entry(cfg, "c4", 13, 13, ""),
	}
	ack := func(e projector.AuditEntry, applied bool) projector.Ack {
		return projector.Ack{EventID: e.EventID, Cluster: e.Cluster, Applied: applied, At: day(6, 0)}
	}
	batch := &projector.Batch{
		Registrations: []projector.ClusterRegistration{
			{Cluster: "c1", Registered: true, RegisteredAt: day(1, 0)}, {Cluster: "c2", Registered: true, RegisteredAt: day(1, 0)},
			{Cluster: "c3", Registered: true, RegisteredAt: day(1, 0)}, {Cluster: "c4", Registered: false, RegisteredAt: day(1, 0)},
		},
		Beats: []projector.ClusterBeat{
			{Cluster: "c1", Seq: 1, At: day(7, 1), ConfigOffset: 5},
			{Cluster: "c3", Seq: 1, At: day(7, 3), ConfigOffset: 12},
			{Cluster: "c5", Seq: 1, At: day(7, 5), ConfigOffset: 0},
		},
		Audit: audit,
		Acks:  []projector.Ack{ack(audit[1], true), ack(audit[2], false), ack(audit[9], true)},
	}
	commit(t, s, batch)
	got, err := s.Backlogs(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []projector.ClusterBacklog{
		{Cluster: "c1", OldestUnapplied: day(5, 7).UTC(), HeartbeatAt: day(7, 1).UTC()},
		{Cluster: "c2", OldestUnapplied: day(5, 10).UTC()},
		{Cluster: "c3", HeartbeatAt: day(7, 3).UTC()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Backlogs (-want +got):\n%s", diff)
	}
	// The acknowledgement of c1's pending change arrives.
	commit(t, s, &projector.Batch{Acks: []projector.Ack{ack(audit[3], true)}})
	got, err = s.Backlogs(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !got[0].OldestUnapplied.IsZero() {
		t.Errorf("after the acknowledgement, Backlogs = %+v; want c1 with nothing pending", got)
	}
}

// BenchmarkBacklogs reads the backlogs of 10,000 registered clusters, each
// with 20 config entries of history, all but the last acknowledged and
// below the offset its heartbeat reported, and one in ten with its last
// change pending: one metrics collection of the per-cluster gauges.
func BenchmarkBacklogs(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.fresh(b)
			const clusters, history = 10_000, 20
			cfg := "argosy.config"
			for c := range clusters {
				name := fmt.Sprintf("c%05d", c)
				batch := &projector.Batch{Registrations: []projector.ClusterRegistration{{Cluster: name, Registered: true, RegisteredAt: day(1, 0)}}}
				last := int64(history)
				if c%10 == 0 {
					last-- // the newest change is pending
				}
				batch.Beats = []projector.ClusterBeat{{Cluster: name, Seq: 1, At: day(7, 0), ConfigOffset: int64(c*history) + last}}
				for i := range history {
					e := projector.AuditEntry{Topic: cfg, Partition: 0, Offset: int64(c*history + i), At: day(5, i), EventID: fmt.Sprintf("%s-%d", name, i),
						Type: "io.argosy.config.application.upserted.v1", Cluster: name, Hash: "h", PrevHash: "p"}
					batch.Audit = append(batch.Audit, e)
					if int64(i) < last {
						batch.Acks = append(batch.Acks, projector.Ack{EventID: e.EventID, Cluster: name, Applied: true, At: day(6, 0)})
					}
				}
				commit(b, s, batch)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bs, err := s.Backlogs(b.Context(), cfg)
				if err != nil || len(bs) != clusters {
					b.Fatalf("Backlogs = %d, %v", len(bs), err)
				}
			}
		})
	}
}
