package events_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
)

// TestDemuxHandsEachTopicItsRecords polls two topics of one client through
// a Demux from two goroutines: each gets its own topic's records, all of
// them, and no other's; a share whose ctx ends returns that error; once the
// client is closed, every share says so.
func TestDemuxHandsEachTopicItsRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"a": {0: kgo.NewOffset().AtStart()}, "b": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cl.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := map[string]int{"a": 30, "b": 20}
	for topic, n := range want {
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	d := events.NewDemux(cl)
	shares := map[string]events.FetchSource{"a": d.Topic("a"), "b": d.Topic("b")}
	var mu sync.Mutex
	got := map[string]int{}
	g, gctx := errgroup.WithContext(ctx)
	for topic, src := range shares {
		g.Go(func() error {
			n := 0
			for n < want[topic] {
				fs := src.PollFetches(gctx)
				if err := fs.Err0(); err != nil {
					return err
				}
				for _, r := range fs.Records() {
					if r.Topic != topic {
						return errors.New("share " + topic + " got a record of " + r.Topic)
					}
					n++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			got[topic] = n
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got["a"] != want["a"] || got["b"] != want["b"] {
		t.Errorf("got %v records, want %v", got, want)
	}

	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := shares["a"].PollFetches(short).Err0(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a poll past its deadline = %v, want the deadline", err)
	}
	cl.Close()
	closed = true
	for topic, src := range shares {
		if fs := src.PollFetches(ctx); !fs.IsClientClosed() {
			t.Errorf("share %s after the client closed: %v, want it closed", topic, fs.Err0())
		}
	}
}
