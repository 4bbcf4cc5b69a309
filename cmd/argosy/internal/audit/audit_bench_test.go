package audit

import (
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// BenchmarkAuditWorstSpec measures argosy audit over the read API whose
// newest entry is a change to one of the worst specs
// (readtest.WorstChanges), as a table and as JSON: one op is the request,
// the decoding of the answer and the output. B/op counts the read API's
// side too, in the same process; out-B is what the command printed.
func BenchmarkAuditWorstSpec(b *testing.B) {
	changes, err := readtest.WorstChanges(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range changes {
		q := readtest.Fleet()
		for i, r := range q.AuditRows {
			if r.EventID == "ev-guestbook" {
				q.AuditRows[i].Before, q.AuditRows[i].After = c.Before, c.After
			}
		}
		server := cmdtest.ReadServer(b, q)
		for _, output := range []string{"table", "json"} {
			b.Run(c.Name+"/"+output, func(b *testing.B) {
				var out string
				b.ReportAllocs()
				for b.Loop() {
					if out, _, err = cmdtest.Run(b, newCmd, "audit", "--server", server, "-o", output); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(c.After)), "spec-B")
				b.ReportMetric(float64(len(out)), "out-B")
			})
		}
	}
}
