package events_test

import (
	"context"
	"crypto/ed25519"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
)

// BenchmarkEncodeSign measures building a signed binary-mode record from an
// event: signing (SHA-256 material, DSSE, Ed25519) and header encoding.
func BenchmarkEncodeSign(b *testing.B) {
	f := newFixture(b)
	e := appUpsert(b, "cluster-a")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c := e.Clone()
		if err := f.hub.Sign(ctx, &c); err != nil {
			b.Fatal(err)
		}
		if _, err := events.EventRecord(ctx, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyDecode measures the full read path of one record: binding,
// signature check, authorization, schema validation and typed decoding. A
// config event comes from the hub; a status delta is what a projector reads
// most. status-parallel decodes on every core, as a projector does: the
// ceiling of its throughput.
func BenchmarkVerifyDecode(b *testing.B) {
	f := newFixture(b)
	for _, bc := range []struct {
		name     string
		e        *event.Event
		signer   *events.Signer
		parallel bool
	}{
		{"config", appUpsert(b, "cluster-a"), f.hub, false},
		{"status", appStatus(b, "cluster-a"), f.clusterA, false},
		{"status-parallel", appStatus(b, "cluster-a"), f.clusterA, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rec := record(b, sign(b, bc.signer, bc.e))
			dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.WithTarget("cluster-a"), events.AcceptCreateTime())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			if !bc.parallel {
				for b.Loop() {
					if _, err := dec.Decode(context.Background(), rec); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := dec.Decode(context.Background(), rec); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkEd25519 is the floor the two benchmarks above stand on.
func BenchmarkEd25519(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 100)
	sig := ed25519.Sign(priv, msg)
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			ed25519.Sign(priv, msg)
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			ed25519.Verify(pub, msg, sig)
		}
	})
}
