package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is a KRaft cluster of several brokers, each its own process with
// its own data: node 1 is the cluster's controller and a broker, the others
// are brokers only. A process's open files bound the connections one
// broker can hold; a cluster holds as many as its brokers together, as a
// real deployment's does.
//
// Each node is in a rack of its own, named by Rack, and the brokers serve
// a client's fetches from a replica in the client's rack (KIP-392's
// RackAwareReplicaSelector), as a cluster spread over zones does: a topic
// replicated to every node can then be read from every node.
type Cluster struct {
	// Nodes are the brokers, node i+1 at index i.
	Nodes []*Broker
}

// StartCluster starts a cluster of n brokers, each in a new temporary
// directory, and waits until every one is in the cluster's metadata. opts
// apply to every broker. The caller must Close it.
func StartCluster(ctx context.Context, n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("kafkatest: a cluster of %d brokers", n)
	}
	cfg, lib, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	first, err := startNode(ctx, lib, cfg, node{id: 1, clusterID: clusterID(), rack: Rack(1)})
	if err != nil {
		return nil, err
	}
	c := &Cluster{Nodes: []*Broker{first}}
	for id := 2; id <= n; id++ {
		b, err := startNode(ctx, lib, cfg, node{id: id, clusterID: first.node.clusterID, brokerOnly: true, ctrlPort: first.node.ctrlPort, rack: Rack(id)})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("kafka node %d: %w", id, err), c.Close(context.WithoutCancel(ctx)))
		}
		c.Nodes = append(c.Nodes, b)
	}
	if err := c.waitJoined(ctx); err != nil {
		return nil, errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}
	return c, nil
}

// Rack is the rack of a cluster's node id (broker.rack), which a client
// names with kgo.Rack to fetch from that node's replicas.
func Rack(id int) string { return fmt.Sprintf("r%d", id) }

// waitJoined waits until the cluster's metadata lists every node.
func (c *Cluster) waitJoined(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		m, err := kadm.NewClient(cl).Metadata(ctx)
		if err == nil && len(m.Brokers) == len(c.Nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka cluster: %d of %d brokers joined: %w", len(m.Brokers), len(c.Nodes), errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Addrs returns every broker's PLAINTEXT address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, b := range c.Nodes {
		out[i] = b.Addr
	}
	return out
}

// Bootstrap returns every broker's address, comma-separated, as Argosy's
// --kafka-brokers takes them.
func (c *Cluster) Bootstrap() string { return strings.Join(c.Addrs(), ",") }

// Client returns a client of the cluster, seeded with every broker's
// address, closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// FetchCounter is a client hook (kgo.WithHooks) that counts the Fetch
// requests the client writes to each broker, and the records of each topic
// each broker's answers brought: which node served a client that names
// its rack.
type FetchCounter struct {
	mu      sync.Mutex
	nodes   map[int32]int
	records map[string]map[int32]int
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (f *FetchCounter) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Fetch) || err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes == nil {
		f.nodes = map[int32]int{}
	}
	f.nodes[meta.NodeID]++
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (f *FetchCounter) OnFetchBatchRead(meta kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.records == nil {
		f.records = map[string]map[int32]int{}
	}
	if f.records[topic] == nil {
		f.records[topic] = map[int32]int{}
	}
	f.records[topic][meta.NodeID] += m.NumRecords
}

// Counts returns the Fetch requests written so far, by node id.
func (f *FetchCounter) Counts() map[int32]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.nodes)
}

// Records returns the records of topic read so far, by the node id that
// served them.
func (f *FetchCounter) Records(topic string) map[int32]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.records[topic])
}

// Pids returns the brokers' process ids.
func (c *Cluster) Pids() []int {
	out := make([]int, len(c.Nodes))
	for i, b := range c.Nodes {
		out[i] = b.Pid()
	}
	return out
}

// Close stops every broker, the controller last (see Broker.Stop for ctx),
// and removes their directories.
func (c *Cluster) Close(ctx context.Context) error {
	var errs []error
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.Nodes[i].Stop(ctx), os.RemoveAll(c.Nodes[i].Dir))
	}
	return errors.Join(errs...)
}
