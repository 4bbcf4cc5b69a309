//go:build integration

package kafkatest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestBrokerStopStartKeepsData stops a broker, checks that nothing listens
// on its port any more, starts it again on the same port and reads back
// what was written before.
func TestBrokerStopStartKeepsData(t *testing.T) {
	b := kafkatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	topic := kafkatest.Prefix(t) + "kept"
	if _, err := kadm.NewClient(b.Client(t)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	if err := prod.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	addr := b.Addr
	stopping := time.Now()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(stopping).Round(time.Millisecond))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", addr)
	}
	starting := time.Now()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("started again in %s", time.Since(starting).Round(time.Millisecond))
	if b.Addr != addr {
		t.Fatalf("Addr = %s after Start, was %s", b.Addr, addr)
	}

	cons := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	var got []string
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "before" {
		t.Fatalf("read %q after the restart, want [before]", got)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
}

// TestClusterSpreadsLeaders starts a cluster of three brokers, creates a
// topic over them and reads back, through one client seeded with every
// address, a record written to each partition: every broker leads some.
func TestClusterSpreadsLeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := kafkatest.StartCluster(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	if got := len(c.Pids()); got != 3 || c.Pids()[0] == c.Pids()[2] {
		t.Fatalf("pids %v, want three processes", c.Pids())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := kafkatest.Prefix(t) + "spread"
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// The brokers learn of a new topic's partitions a moment after it is
	// created: read its metadata until they all have a leader.
	leaders := map[int32]bool{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		topics, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		clear(leaders)
		for _, p := range topics[topic].Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader] = true
			}
		}
		if len(topics[topic].Partitions) == 6 && len(leaders) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v: want each of the 3 brokers to lead a partition", leaders)
	}
	for p := range int32(6) {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte{byte(p)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != 1 {
			t.Errorf("partition %d ends at %d, want 1", o.Partition, o.Offset)
		}
	})
	checkFetchesFromRack(ctx, t, c, cl)
}

// checkFetchesFromRack reads a topic replicated to every node, with a
// client in the rack of a node that does not lead it, and checks that the
// client's fetches went to that node: a cluster's nodes are in racks of
// their own, and serve fetches from the client's rack.
func checkFetchesFromRack(ctx context.Context, t *testing.T, c *kafkatest.Cluster, prod *kgo.Client) {
	t.Helper()
	topic := kafkatest.Prefix(t) + "racks"
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 1, int16(len(c.Nodes)), nil, topic); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := td[topic].Partitions[0].Leader
	near := leader%int32(len(c.Nodes)) + 1 // another node
	fetches := &kafkatest.FetchCounter{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.Rack(kafkatest.Rack(int(near))), kgo.WithHooks(fetches),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 1; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			got += fs.NumRecords()
		}
	}
	if got := fetches.Counts(); got[near] == 0 {
		t.Fatalf("fetches by node %v, leader %d: none went to node %d, in the client's rack", got, leader, near)
	}
}
