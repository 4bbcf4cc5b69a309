//go:build integration

package spoke_test

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/spoke"
)

// listings records the partitions each ListOffsets request written on
// the connections of a client (its kgo.Dialer) names, by topic: the
// requests are read off the wire, as the broker reads them.
type listings struct {
	mu    sync.Mutex
	lists []map[string][]int32
	// metadata counts the Metadata requests written.
	metadata int
}

func (l *listings) dial(ctx context.Context, network, host string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &listingConn{Conn: conn, l: l}, nil
}

// of returns the partitions of topic each listing that names topic names.
func (l *listings) of(topic string) [][]int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]int32
	for _, m := range l.lists {
		if ps, ok := m[topic]; ok {
			out = append(out, ps)
		}
	}
	return out
}

// listingConn is a connection whose writes listings reads requests from.
type listingConn struct {
	net.Conn
	l   *listings
	buf []byte
}

func (c *listingConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.request(c.buf[4 : 4+size])
		c.buf = c.buf[4+size:]
	}
	return c.Conn.Write(p)
}

// request records frame if it is a ListOffsets request: key, version,
// correlation id, client id, then (flexible versions) tagged fields, then
// the body.
func (c *listingConn) request(frame []byte) {
	if len(frame) >= 2 && int16(binary.BigEndian.Uint16(frame)) == (&kmsg.MetadataRequest{}).Key() {
		c.l.mu.Lock()
		c.l.metadata++
		c.l.mu.Unlock()
	}
	if len(frame) < 10 || int16(binary.BigEndian.Uint16(frame)) != (&kmsg.ListOffsetsRequest{}).Key() {
		return
	}
	req := kmsg.ListOffsetsRequest{Version: int16(binary.BigEndian.Uint16(frame[2:]))}
	rest := frame[8:]
	if n := int16(binary.BigEndian.Uint16(rest)); n > 0 {
		rest = rest[2+int(n):]
	} else {
		rest = rest[2:]
	}
	if req.IsFlexible() {
		tags, n := binary.Uvarint(rest)
		rest = rest[n:]
		for range tags {
			_, n := binary.Uvarint(rest)
			size, m := binary.Uvarint(rest[n:])
			rest = rest[n+m+int(size):]
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return
	}
	m := map[string][]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			m[t.Topic] = append(m[t.Topic], p.Partition)
		}
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.lists = append(c.l.lists, m)
}

// TestAgentListsOnlyItsPartition: the heartbeat of an agent whose config
// topic has 8 partitions lists the end of the agent's partition alone,
// each time, so that it needs no connection to the brokers that lead the
// others.
func TestAgentListsOnlyItsPartition(t *testing.T) {
	f := newFleet(t, 8)
	defer f.client.Close()
	keys, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	l := &listings{}
	a := &agent{cluster: "lister", argo: &fakeArgo{applied: map[string]int64{}}}
	a.run, err = spoke.New(a.cluster, keys, f.hub.Public(), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t)), kgo.Dialer(l.dial)},
		a.argo, noApps{}, newMemStore(), spoke.WithTopics(f.topics), spoke.WithHeartbeatInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.start(t)()
	f.publish(f.prod, f.upsert(a.cluster, "web", 1))
	waitApplied(t, a, "argocd/web")
	config := f.topics[events.TopicConfig]
	settled := len(l.of(config))
	eventually(t, "the agent's heartbeats listed no config offsets", func() bool { return len(l.of(config)) >= settled+3 })
	for _, ps := range l.of(config)[settled:] {
		if len(ps) != 1 || !slices.Equal(ps, l.of(config)[settled]) {
			t.Errorf("the agent's listings of %s name partitions %v, want its own partition alone, each time (%v)", config, ps, l.of(config)[settled:])
			break
		}
	}
	// Nor does a listing ask for metadata: the agent's client knows its
	// partition's leader from its fetches. Eight heartbeats a second apart
	// asked for it every 5 s, which opened a connection to a broker picked
	// at random each time.
	l.mu.Lock()
	before := l.metadata
	l.mu.Unlock()
	listed := len(l.of(config))
	eventually(t, "eight more heartbeats", func() bool { return len(l.of(config)) >= listed+8 })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.metadata != before {
		t.Errorf("%d Metadata requests over eight heartbeats, want none", l.metadata-before)
	}
}
