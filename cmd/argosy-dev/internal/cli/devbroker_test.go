package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStamp: a stamped batch carries the broker's time, keeps its records'
// offsets from the first, and its checksum verifies.
func TestStamp(t *testing.T) {
	b := kmsg.RecordBatch{Magic: 2, FirstTimestamp: 1000, MaxTimestamp: 1250, NumRecords: 1, LastOffsetDelta: 0, ProducerID: -1, FirstSequence: -1}
	b.Records = []byte{1, 2, 3}
	one := b.AppendTo(nil)
	binary.BigEndian.PutUint32(one[8:], uint32(len(one)-12))
	raw := append(append([]byte{}, one...), one...) // two batches in one request
	for _, at := range []int{0, len(raw) / 2} {
		if got := crc32.Checksum(raw[at+21:at+len(raw)/2], castagnoli); int32(got) == b.CRC && b.CRC != 0 {
			t.Fatal("the fixture's checksum is already right")
		}
	}
	stamp(raw, 5000)
	for _, at := range []int{0, len(raw) / 2} {
		var got kmsg.RecordBatch
		if err := got.ReadFrom(raw[at : at+len(raw)/2]); err != nil {
			t.Fatal(err)
		}
		if got.FirstTimestamp != 5000 || got.MaxTimestamp != 5250 {
			t.Errorf("timestamps %d..%d, want 5000..5250", got.FirstTimestamp, got.MaxTimestamp)
		}
		if want := int32(crc32.Checksum(raw[at+21:at+len(raw)/2], castagnoli)); got.CRC != want {
			t.Errorf("crc %x, want %x", got.CRC, want)
		}
	}
}

// TestEmbeddedBroker: records produced to the embedded broker come back
// with the broker's time and a checksum the client accepts, from a topic
// that asks for LogAppendTime as Argosy's do.
func TestEmbeddedBroker(t *testing.T) {
	c, err := startBroker(t.TempDir(), 0, slog.New(slog.DiscardHandler), net.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lat := "LogAppendTime"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &lat}, "t"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	past := time.Now().Add(-48 * time.Hour)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v"), Timestamp: past}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Timestamp.Before(before) {
		t.Fatalf("records %v: want one stamped with the broker's time, not the producer's %s", recs, past)
	}
}

// TestEmbeddedBrokerAsksNoTelemetry: the embedded broker asks clients for
// no metrics (KIP-714), as Apache Kafka without a metrics subscription
// does; kfake asked for all of them, and every client of the fleet then
// compressed and pushed its metrics every 30 s.
func TestEmbeddedBrokerAsksNoTelemetry(t *testing.T) {
	c, err := startBroker(t.TempDir(), 0, slog.New(slog.DiscardHandler), net.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.RequestedMetrics) != 0 || resp.ClientInstanceID == [16]byte{} || resp.PushIntervalMillis <= 0 {
		t.Errorf("requested metrics %q, client id %x, push interval %d ms: want none, an id, a positive interval",
			resp.RequestedMetrics, resp.ClientInstanceID, resp.PushIntervalMillis)
	}
}

// failingListener fails its first accepts with err, then accepts.
type failingListener struct {
	net.Listener
	err   error
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// TestEmbeddedBrokerOutlivesAcceptErrors: when accept fails because the
// process is out of file descriptors or a connection was aborted, the
// embedded broker still takes the next connections (kfake's own loop
// ended on the first error, and the broker took none after it).
func TestEmbeddedBrokerOutlivesAcceptErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			listen := func(network, addr string) (net.Listener, error) {
				ln, err := net.Listen(network, addr)
				fl := &failingListener{Listener: ln, err: &net.OpError{Op: "accept", Net: network, Err: os.NewSyscallError("accept", errno)}}
				fl.fails.Store(2)
				return fl, err
			}
			c, err := startBroker(t.TempDir(), 0, slog.New(slog.DiscardHandler), listen)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("after %s on accept: %v", errno, err)
			}
			select {
			case err := <-c.failed:
				t.Errorf("failed %v: want nothing for an error that passes", err)
			default:
			}
		})
	}
}

// TestEmbeddedBrokerFailureEndsDev: an accept error that does not pass
// is reported, and argosy dev's watch of the broker returns it with what
// it means, so that the process exits instead of serving without a
// broker.
func TestEmbeddedBrokerFailureEndsDev(t *testing.T) {
	boom := errors.New("accept: the listener broke")
	listen := func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		fl := &failingListener{Listener: ln, err: boom}
		fl.fails.Store(1)
		return fl, err
	}
	c, err := startBroker(t.TempDir(), 0, slog.New(slog.DiscardHandler), listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := &devKafkaConn{failed: c.failed}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound on a wait for nothing, not a measure
	defer cancel()
	err = k.watch(ctx)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "the embedded broker stopped taking connections") {
		t.Errorf("watch: %v, want %v with what it means", err, boom)
	}
}
