package read_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// chain returns n entries of one partition, chained, with offsets that skip
// numbers as a compacted or shared partition's do.
func chain(topic string, partition int32, n int) []projector.AuditRow {
	rows := make([]projector.AuditRow, n)
	prev := ""
	for i := range rows {
		e := projector.AuditEntry{Topic: topic, Partition: partition, Offset: int64(3*i + i%2),
			At: time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC), EventID: fmt.Sprintf("ev-%d", i),
			Type: "io.argosy.config.application.upserted.v1", Cluster: "c", Kind: "applications", Name: fmt.Sprintf("app-%d", i%3),
			Generation: int64(i + 1), Actor: "alice", PrevHash: prev}
		e.Hash = readtest.ChainHash(prev, e)
		prev = e.Hash
		rows[i] = projector.AuditRow{AuditEntry: e}
	}
	return rows
}

// TestVerifyPagedAgreesWithVerify checks the paged verification against
// projector.Verify over the whole chain, for chains tampered with in each
// way and read a page of every size.
func TestVerifyPagedAgreesWithVerify(t *testing.T) {
	const n = 9
	tamper := map[string]func(rows []projector.AuditRow, k int) []projector.AuditRow{
		"intact": func(rows []projector.AuditRow, _ int) []projector.AuditRow { return rows },
		"changed": func(rows []projector.AuditRow, k int) []projector.AuditRow {
			rows[k].Actor = "mallory"
			return rows
		},
		"removed": func(rows []projector.AuditRow, k int) []projector.AuditRow {
			return slices.Delete(rows, k, k+1)
		},
		"reordered": func(rows []projector.AuditRow, k int) []projector.AuditRow {
			if k+1 < len(rows) {
				rows[k].Offset, rows[k+1].Offset = rows[k+1].Offset, rows[k].Offset
			}
			return rows
		},
		"rehashed": func(rows []projector.AuditRow, k int) []projector.AuditRow {
			// Changed and hashed again, but the next entry still names the
			// old hash.
			rows[k].Generation += 100
			rows[k].Hash = readtest.ChainHash(rows[k].PrevHash, rows[k].AuditEntry)
			return rows
		},
	}
	for name, f := range tamper {
		for k := range n {
			rows := f(chain("argosy.config", 2, n), k)
			entries := make([]projector.AuditEntry, len(rows))
			for i, r := range rows {
				entries[i] = r.AuditEntry
			}
			slices.SortStableFunc(entries, func(a, b projector.AuditEntry) int { return int(a.Offset - b.Offset) })
			want := projector.Verify(entries)
			for _, page := range []int{1, 2, 3, 4, n - 1, n, n + 1, 100} {
				t.Run(fmt.Sprintf("%s/%d/page%d", name, k, page), func(t *testing.T) {
					v, err := read.VerifyChains(t.Context(), &readtest.Query{AuditRows: rows}, page)
					if err != nil {
						t.Fatal(err)
					}
					if len(v.Partitions) != 1 {
						t.Fatalf("partitions %+v", v.Partitions)
					}
					if diff := cmp.Diff(want, v.Broken); diff != "" {
						t.Errorf("broken link (-projector.Verify +paged):\n%s", diff)
					}
					if v.OK != (want == nil) || (v.Partitions[0].Head != "") != (want == nil) {
						t.Errorf("ok %v, head %q, want broken %v", v.OK, v.Partitions[0].Head, want)
					}
				})
			}
		}
	}
}

func TestVerifyPartitions(t *testing.T) {
	rows := append(append(chain("argosy.config", 0, 4), chain("argosy.config", 1, 5)...), chain("argosy.audit", 0, 3)...)
	rows[5].Actor = "mallory" // argosy.config/1, second entry
	rows[11].Actor = "eve"    // argosy.audit/0, third entry
	v, err := read.VerifyChains(t.Context(), &readtest.Query{AuditRows: rows}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range v.Partitions {
		s := fmt.Sprintf("%s/%d entries=%d", p.Topic, p.Partition, p.Entries)
		if p.Broken != nil {
			s += fmt.Sprintf(" broken at %d", p.Broken.Offset)
		}
		got = append(got, s)
	}
	want := []string{"argosy.audit/0 entries=3 broken at 6", "argosy.config/0 entries=4", "argosy.config/1 entries=2 broken at 4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if v.OK || v.Broken == nil || v.Broken.Topic != "argosy.audit" {
		t.Errorf("ok %v, first broken %+v, want argosy.audit's", v.OK, v.Broken)
	}
	v, err = read.VerifyChains(t.Context(), &readtest.Query{}, 0)
	if err != nil || !v.OK || v.Partitions == nil || len(v.Partitions) != 0 {
		t.Errorf("no audit entries: %+v, %v", v, err)
	}
}

// badStore misbehaves in one way.
type badStore struct {
	*readtest.Query
	chain func(p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error)
}

func (s badStore) Chain(ctx context.Context, p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error) {
	return s.chain(p, after, limit)
}

func TestVerifyBadStore(t *testing.T) {
	rows := append(chain("argosy.config", 0, 6), chain("argosy.config", 1, 2)...)
	q := &readtest.Query{AuditRows: rows}
	tests := []struct {
		name    string
		chain   func(p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error)
		broken  string
		errText string
	}{
		{"ignores after", func(p projector.Partition, _ int64, limit int) ([]projector.AuditEntry, error) {
			return q.Chain(context.Background(), p, -1, limit)
		}, "offsets out of order", ""},
		{"ignores the partition", func(_ projector.Partition, after int64, limit int) ([]projector.AuditEntry, error) {
			return q.Chain(context.Background(), projector.Partition{Topic: "argosy.config", Partition: 0}, after, limit)
		}, "entries of several partitions given as one chain", ""},
		{"fails", func(projector.Partition, int64, int) ([]projector.AuditEntry, error) {
			return nil, errors.New("connection reset")
		}, "", "reading the audit chain of argosy.config/0 after offset -1: connection reset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := read.VerifyChains(t.Context(), badStore{q, tc.chain}, 4)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || v.Broken == nil || v.Broken.Reason != tc.broken {
				t.Errorf("ok %v broken %+v, want %q", v.OK, v.Broken, tc.broken)
			}
		})
	}
}
