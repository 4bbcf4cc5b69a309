package web_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/projector/read/readtest"
)

// BenchmarkAuditPageWorstSpec measures one render of the audit page whose
// newest change is to one of the worst specs (readtest.WorstChanges),
// from one of the same shape whose every nested line differs, and, as
// shown-largest, the largest such change the page still diffs line by
// line (specs 6 levels deep, just under 256 KiB a side once indented).
// page-B is the page's size.
func BenchmarkAuditPageWorstSpec(b *testing.B) {
	changes, err := readtest.WorstChanges(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	changes = append(changes, largestShown(b))
	for _, c := range changes {
		b.Run(c.Name, func(b *testing.B) {
			h := auditPage(b, c.Before, c.After)
			body := serveAudit(b, h)
			b.ReportAllocs()
			for b.Loop() {
				serveAudit(b, h)
			}
			b.ReportMetric(float64(len(c.After)), "spec-B")
			b.ReportMetric(float64(len(body)), "page-B")
		})
	}
}

// largestShown is the largest change of specs 6 levels deep that the
// audit page diffs line by line, every nested line changed.
func largestShown(b *testing.B) readtest.Change {
	b.Helper()
	for size := 256 << 10; size > 1<<10; size -= size / 20 {
		after := readtest.WideSpec(size, 6)
		before := bytes.ReplaceAll(after, []byte(`"v"`), []byte(`"w"`))
		if !strings.Contains(serveAudit(b, auditPage(b, before, after)), "to show") {
			return readtest.Change{Name: "shown-largest", Before: before, After: after}
		}
	}
	b.Fatal("no change of specs 6 levels deep is shown")
	return readtest.Change{}
}
