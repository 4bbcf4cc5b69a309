package sqlstore

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// wideSpec is a spec of n bytes, one member whose value starts with i,
// so that a spec read for the wrong row shows. It has one member, which
// PostgreSQL's JSONB keeps in place.
func wideSpec(n, i int) json.RawMessage {
	head := fmt.Sprintf(`{"pad":"%d `, i)
	return json.RawMessage(head + strings.Repeat("x", max(0, n-len(head)-2)) + `"}`)
}

// largeAudit is a batch of n audit entries of one partition, each with
// a before and an after of size bytes; the newest entry's after is large
// bytes. Entries are at one-second steps from at, offsets from 1.
func largeAudit(n, size, large int) *projector.Batch {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b := &projector.Batch{Offsets: map[projector.Partition]int64{pConfig0: int64(n + 1)}}
	for i := range n {
		e := projector.AuditEntry{Topic: pConfig0.Topic, Partition: pConfig0.Partition, Offset: int64(i + 1),
			At: at.Add(time.Duration(i) * time.Second), EventID: fmt.Sprintf("e%d", i), Type: "t.upserted",
			Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: "a1", Generation: int64(i + 1),
			Before: wideSpec(size, i), After: wideSpec(size, i+1), Hash: fmt.Sprintf("h%d", i)}
		if i == n-1 {
			e.After = wideSpec(large, i+1)
		}
		b.Audit = append(b.Audit, e)
	}
	return b
}

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// testAuditBounded: one Audit call reads specs until they reach one
// answer's budget, in the answer's order, and reads none past it nor any
// larger than the limit of one spec: a marker with the spec's size stands
// in their place. What it allocates is bounded by the budget, not by the
// entries it lists. The limits are lowered, so that 16 MB of specs are
// sixteen times the budget.
func testAuditBounded(t *testing.T, b backend) {
	const (
		entries = 200
		size    = 40 << 10
		large   = 100 << 10
	)
	s := b.fresh(t)
	s.maxSpec, s.maxAnswer = 64<<10, 1<<20
	batch := largeAudit(entries, size, large)
	commit(t, s, batch)
	var rows []projector.AuditRow
	var err error
	n := allocated(func() { rows, err = s.Audit(t.Context(), projector.AuditFilter{Limit: 1000}) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Audit of %d entries with %d bytes of specs allocated %d bytes", entries, 2*entries*size, n)
	if len(rows) != entries {
		t.Fatalf("Audit listed %d entries, want %d", len(rows), entries)
	}
	// The budget read twice (the driver's copy, then Scan's), some slack,
	// and the rows without their specs: well under 4 KiB each.
	if limit := uint64(4*s.maxAnswer + entries*4<<10); n > limit {
		t.Errorf("Audit of %d entries with %d bytes of specs allocated %d bytes, want at most %d",
			entries, 2*entries*size, n, limit)
	}
	// Newest first: the newest entry's after is past the limit of one
	// spec, its before within it; then specs until the budget is spent.
	newest := rows[0]
	if o, ok := projector.Omitted(newest.After); !ok || o != (projector.OmittedSpec{Reason: projector.OmittedSize, Bytes: large}) {
		t.Errorf("the newest entry's after = %.80s, want a marker of its size (%d bytes)", newest.After, large)
	}
	carried, markers := 0, 0
	for i, r := range rows {
		stored := batch.Audit[entries-1-i]
		for _, side := range [][2]json.RawMessage{{r.Before, stored.Before}, {r.After, stored.After}} {
			got, want := side[0], side[1]
			o, omitted := projector.Omitted(got)
			switch {
			case !omitted:
				if string(got) != string(want) {
					t.Fatalf("entry %d: a spec of %d bytes, want the stored %d bytes", i, len(got), len(want))
				}
				carried += len(got)
			case o.Bytes != len(want):
				t.Errorf("entry %d: a marker of %d bytes, want the stored spec's %d", i, o.Bytes, len(want))
			case o.Reason == projector.OmittedAnswer:
				markers++
			}
		}
	}
	if carried > s.maxAnswer || carried < s.maxAnswer-2*size || markers == 0 {
		t.Errorf("Audit carried %d bytes of specs and %d markers of the answer's budget, want %d bytes less one or two specs",
			carried, markers, s.maxAnswer)
	}
}

// largeApps is a batch of n Applications, each desired with a spec of
// size bytes and published by its cluster with a local spec of size
// bytes; the first one's desired spec is large bytes.
func largeApps(n, size, large int) *projector.Batch {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b := &projector.Batch{Offsets: map[projector.Partition]int64{pConfig0: int64(n + 1)}}
	for i := range n {
		k := key("c1", "argocd", fmt.Sprintf("app-%04d", i))
		d := projector.AppDesired{AppKey: k, Project: "p1", Generation: 1, Spec: wideSpec(size, i), EventID: fmt.Sprintf("e%d", i),
			UpdatedAt: at}
		if i == 0 {
			d.Spec = wideSpec(large, i)
		}
		b.Desired = append(b.Desired, d)
		b.Observed = append(b.Observed, projector.AppObserved{AppKey: k, Seq: 1, UpdatedAt: at,
			Local: &projector.LocalApp{Project: "p1", Labels: map[string]string{"team": "x"}, Spec: wideSpec(size, -i),
				Generation: 1, EventID: fmt.Sprintf("l%d", i), At: at}})
	}
	return b
}

// testAppsBounded: Apps reads desired and local specs, in that order by
// row, until they reach one answer's budget, and none past it or larger
// than one spec's limit, as Audit does (testAuditBounded).
func testAppsBounded(t *testing.T, b backend) {
	const (
		apps  = 100
		size  = 40 << 10
		large = 100 << 10
	)
	s := b.fresh(t)
	s.maxSpec, s.maxAnswer = 64<<10, 1<<20
	batch := largeApps(apps, size, large)
	commit(t, s, batch)
	var rows []projector.AppRow
	var err error
	n := allocated(func() { rows, err = s.Apps(t.Context(), projector.AppFilter{}) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Apps of %d Applications with %d bytes of specs allocated %d bytes", apps, 2*apps*size, n)
	if len(rows) != apps {
		t.Fatalf("Apps listed %d Applications, want %d", len(rows), apps)
	}
	if limit := uint64(4*s.maxAnswer + apps*4<<10); n > limit {
		t.Errorf("Apps of %d Applications with %d bytes of specs allocated %d bytes, want at most %d",
			apps, 2*apps*size, n, limit)
	}
	if o, ok := projector.Omitted(rows[0].Desired.Spec); !ok || o != (projector.OmittedSpec{Reason: projector.OmittedSize, Bytes: large}) {
		t.Errorf("the first Application's spec = %.80s, want a marker of its size (%d bytes)", rows[0].Desired.Spec, large)
	}
	carried, markers := 0, 0
	for i, r := range rows {
		if r.Observed == nil || r.Observed.Local == nil || r.Observed.Local.Project != "p1" || r.Observed.Local.Labels["team"] != "x" {
			t.Fatalf("Application %d: local %+v, want project p1 and its labels", i, r.Observed)
		}
		stored := [2]json.RawMessage{batch.Desired[i].Spec, batch.Observed[i].Local.Spec}
		for j, got := range []json.RawMessage{r.Desired.Spec, r.Observed.Local.Spec} {
			want := stored[j]
			o, omitted := projector.Omitted(got)
			switch {
			case !omitted:
				if string(got) != string(want) {
					t.Fatalf("Application %d: a spec of %d bytes, want the stored %d bytes", i, len(got), len(want))
				}
				carried += len(got)
			case o.Reason == projector.OmittedAnswer:
				markers++
			}
		}
	}
	if carried > s.maxAnswer || carried < s.maxAnswer-4*size || markers == 0 {
		t.Errorf("Apps carried %d bytes of specs and %d markers of the answer's budget, want %d bytes less a few specs",
			carried, markers, s.maxAnswer)
	}
}

// BenchmarkAudit reads one answer of 1,000 audit entries (read.MaxAuditLimit)
// with the store's limits: of ordinary specs (2 KiB a side), and of large
// ones (256 KiB a side, 500 MB in all), of which the store reads one
// answer's budget (16 MiB) and leaves out the rest.
func BenchmarkAudit(b *testing.B) {
	for _, bk := range benchBackends() {
		for _, tc := range []struct {
			name string
			size int
		}{{"ordinary", 2 << 10}, {"large", 256 << 10}} {
			b.Run(bk.name+"/"+tc.name, func(b *testing.B) {
				s := bk.fresh(b)
				const entries = 1000
				for lo := 0; lo < entries; lo += 50 {
					batch := largeAudit(50, tc.size, tc.size)
					for i := range batch.Audit {
						batch.Audit[i].Offset += int64(lo)
						batch.Audit[i].At = batch.Audit[i].At.Add(time.Duration(lo) * time.Second)
					}
					batch.Offsets[pConfig0] += int64(lo)
					commit(b, s, batch)
				}
				b.ReportAllocs()
				for b.Loop() {
					rows, err := s.Audit(b.Context(), projector.AuditFilter{Limit: 1000})
					if err != nil || len(rows) != entries {
						b.Fatalf("Audit: %d entries, %v", len(rows), err)
					}
				}
			})
		}
	}
}
