package hub

import "time"

// WithLedgerLag holds a replica's ledger behind the log by d per record, so
// a test can show that a write decides only on a ledger read to the end.
func WithLedgerLag(d time.Duration) Option { return func(o *options) { o.ledgerLag = d } }

// Routes returns the method and path of every route of the hub's own, for
// the test that holds them and openapi.yaml to the same set.
func Routes() [][2]string {
	var out [][2]string
	for _, rt := range routes() {
		out = append(out, [2]string{rt.method, rt.path})
	}
	return out
}
