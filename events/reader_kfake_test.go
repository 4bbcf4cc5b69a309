package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
)

// TestReaderStartsWithoutGroup: a broker may answer the offsets of a group
// that never committed with GROUP_ID_NOT_FOUND rather than with none
// (kfake does): the reader then starts from its Start offset, as it does
// for a group with no offsets.
func TestReaderStartsWithoutGroup(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "config"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(append(events.ReaderOpts(), kgo.SeedBrokers(c.ListenAddrs()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rec := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
	rec.Topic = "config"
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.AcceptCreateTime())
	if err != nil {
		t.Fatal(err)
	}
	in, err := events.NewIntake(dec, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := events.NewReader(cl, in, "config", "never-committed")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	err = rd.Run(ctx, func(_ context.Context, d *events.Decoded) error {
		got <- d.Event.ID()
		cancel()
		return nil
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	select {
	case <-got:
	default:
		t.Fatal("the record was not handled")
	}
}
