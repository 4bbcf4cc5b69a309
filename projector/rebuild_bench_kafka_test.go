//go:build integration

package projector_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// benchLog is a log of status deltas for the rebuild benchmarks: benchN
// events from 100 clusters over 1,000 Applications, on 8 status
// partitions, each cluster's key registered on the trust topic.
const benchN = 50_000

func benchLog(b *testing.B) (events.Topics, *events.Signer) {
	b.Helper()
	topics := events.DefaultTopics(kafkatest.Prefix(b))
	ctx := b.Context()
	if err := events.EnsureTopics(ctx, kadm.NewClient(kafkatest.Client(b)), topics, events.TopicPlan(8, 8), 1, 1); err != nil {
		b.Fatal(err)
	}
	raw := kafkatest.Client(b, events.ProducerOpts(nil)...)
	hub, err := events.GenerateSigner()
	if err != nil {
		b.Fatal(err)
	}
	hubP, err := events.NewProducer(raw, hub, topics)
	if err != nil {
		b.Fatal(err)
	}
	const clusters = 100
	producers := make([]*events.Producer, clusters)
	var regs []*event.Event
	for c := range clusters {
		s, err := events.GenerateSigner()
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("c%03d", c)
		if producers[c], err = events.NewProducer(raw, s, topics); err != nil {
			b.Fatal(err)
		}
		e, err := events.New("//argosy.dev/hub/bench", events.TypeKeyRegistered, events.Subject{Cluster: name}.String(), name,
			schemas.KeyRegistered{KeyID: s.KeyID(), Owner: name, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
				Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())})
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, e)
	}
	if _, err := hubP.Publish(ctx, regs...); err != nil {
		b.Fatal(err)
	}
	const per = 50 // events of one cluster per publish: one batch
	for i := 0; i < benchN; i += per {
		c := (i / per) % clusters
		name := fmt.Sprintf("c%03d", c)
		es := make([]*event.Event, 0, per)
		for j := range per {
			app := fmt.Sprintf("app-%d", (i+j)%10)
			res := schemas.Resource{Cluster: name, Namespace: "argocd", Name: app, Generation: int64(1 + (i+j)%7)}
			e, err := events.New("//argosy.dev/spoke/"+name, events.TypeApplicationStatus,
				events.Subject{Cluster: name, Kind: "applications", Namespace: "argocd", Name: app}.String(), name,
				schemas.ApplicationStatusChanged{Resource: res, Seq: int64(i + j + 1), Full: true,
					Sync:   &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("%040d", i+j)},
					Health: &schemas.HealthStatus{Status: "Healthy"}})
			if err != nil {
				b.Fatal(err)
			}
			es = append(es, e)
		}
		if _, err := producers[c].Publish(ctx, es...); err != nil {
			b.Fatal(err)
		}
	}
	return topics, hub
}

// BenchmarkRebuild measures projector.Rebuild over benchN status deltas
// on the real broker, into a new SQLite store each time: reading,
// verifying every signature, folding and committing. It reports events/s.
func BenchmarkRebuild(b *testing.B) {
	topics, hub := benchLog(b)
	conn := []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(b))}
	var folded int64
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		store, err := sqlstore.OpenSQLite(b.Context(), filepath.Join(b.TempDir(), "views.db"))
		if err != nil {
			b.Fatal(err)
		}
		var last projector.Progress
		rb, err := projector.NewRebuild(conn, store, []events.Key{events.HubAnchor("hub", hub.Public())}, projector.From{},
			projector.WithTopics(topics), projector.WithClockMargin(10*time.Millisecond),
			projector.WithProgress(func(p projector.Progress) { last = p }))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if err := rb.Run(b.Context()); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(began)
		b.StopTimer()
		if last.Events != benchN {
			b.Fatalf("folded %d events, want %d", last.Events, benchN)
		}
		folded += last.Events
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(folded)/elapsed.Seconds(), "events/s")
}

// BenchmarkFoldStore measures the fold step alone over the same log,
// decoded once beforehand: projector.Folder folding and committing steps
// of 10,000 events into a new SQLite store. It reports events/s.
func BenchmarkFoldStore(b *testing.B) {
	topics, hub := benchLog(b)
	decoded := decodeLog(b, topics, hub)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		store, err := sqlstore.OpenSQLite(b.Context(), filepath.Join(b.TempDir(), "views.db"))
		if err != nil {
			b.Fatal(err)
		}
		folder, err := projector.NewFolder(store)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		for lo := 0; lo < len(decoded); lo += 10_000 {
			step := decoded[lo:min(lo+10_000, len(decoded))]
			if _, err := folder.Fold(b.Context(), projector.Step{Events: step}); err != nil {
				b.Fatal(err)
			}
			if err := folder.Commit(b.Context(), len(step)); err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(began)
		b.StopTimer()
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*len(decoded))/elapsed.Seconds(), "events/s")
}

// decodeLog reads and decodes the status topic of benchLog whole, with
// the cluster keys its trust topic registers.
func decodeLog(b *testing.B, topics events.Topics, hub *events.Signer) []*events.Decoded {
	b.Helper()
	keys := events.NewRegistry(events.HubAnchor("hub", hub.Public()))
	trust := kafkatest.Client(b, events.TrustConsumeOpts(topics)...)
	for _, d := range readDecoded(b, trust, keys.Anchors(), topics, 100) {
		if err := keys.Apply(d); err != nil {
			b.Fatal(err)
		}
	}
	status := kafkatest.Client(b, kgo.ConsumeTopics(topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	return readDecoded(b, status, keys, topics, benchN)
}

// readDecoded polls cl until it has decoded n events against keys.
func readDecoded(b *testing.B, cl *kgo.Client, keys events.KeySource, topics events.Topics, n int) []*events.Decoded {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(topics))
	if err != nil {
		b.Fatal(err)
	}
	var out []*events.Decoded
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatal(ctx.Err())
		}
		for _, rec := range fs.Records() {
			d, err := dec.Decode(ctx, rec)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}
