package read_test

import (
	"net/http/httptest"
	"testing"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// BenchmarkAnswerWorstSpec measures what the read API and its client (the
// CLI's) cost to answer for the worst specs (readtest.WorstChanges): one
// op is GET /api/v1/audit with the change and GET /api/v1/applications
// with the Application wanted at its spec, served and decoded over
// loopback HTTP. B/op counts server and client together.
func BenchmarkAnswerWorstSpec(b *testing.B) {
	changes, err := readtest.WorstChanges(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range changes {
		b.Run(c.Name, func(b *testing.B) {
			q := readtest.Fleet()
			for i, r := range q.AuditRows {
				if r.EventID == "ev-guestbook" {
					q.AuditRows[i].Before, q.AuditRows[i].After = c.Before, c.After
				}
			}
			d := *q.AppRows[0].Desired
			d.Spec = c.After
			q.AppRows[0].Desired = &d
			srv := httptest.NewServer(newHandler(q))
			defer srv.Close()
			cl := testClient{srv}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.Audit(b.Context(), projector.AuditFilter{}); err != nil {
					b.Fatal(err)
				}
				if _, err := cl.Apps(b.Context(), projector.AppFilter{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.After)), "spec-B")
			b.ReportMetric(float64(c.EventBytes), "event-B")
		})
	}
}
