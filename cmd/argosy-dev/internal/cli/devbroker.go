package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/argosyproj/argosy/events"
)

// embeddedBroker is argosy dev's embedded Kafka-compatible broker and what
// tells that it stopped taking connections.
type embeddedBroker struct {
	*kfake.Cluster
	// failed receives the accept error the broker's listener could not
	// wait out: from then on no client can connect.
	failed <-chan error
}

// startBroker starts the embedded Kafka-compatible broker of argosy dev:
// franz-go's kfake, one broker on 127.0.0.1, its log kept in dir. listen
// makes its listener (net.Listen; a test gives one that fails).
//
// Every Argosy topic stamps records with the broker's LogAppendTime, and
// readers refuse records a producer stamped (docs/design.md). kfake keeps
// the producer's time, and gets the checksum wrong when a batch asks for
// LogAppendTime, so the broker stamps each produced batch with its own
// clock as it takes it, a CreateTime that is the broker's, and argosy
// dev's components accept it (events.AcceptCreateTime).
//
// kfake asks every client for its metrics (KIP-714); the broker answers
// as an Apache Kafka with no metrics subscription does, asking for none.
// Else each client compresses and pushes its metrics every 30 s, which
// for a fleet of agents was most of the process's heap.
//
// kfake's accept loop ends on the first accept error, leaving a running
// process whose broker takes no connections; the listener it is given
// waits out the errors that pass (acceptListener), and reports the others
// on failed.
func startBroker(dir string, port int, log *slog.Logger, listen func(network, addr string) (net.Listener, error)) (*embeddedBroker, error) {
	failed := make(chan error, 1)
	wrap := func(network, addr string) (net.Listener, error) {
		ln, err := listen(network, addr)
		if err != nil {
			return nil, err
		}
		return newAcceptListener(ln, log, failed), nil
	}
	var c *kfake.Cluster
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir), kfake.ClusterID("argosy-dev"),
		kfake.ListenFn(wrap))
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		now := time.Now().UnixMilli()
		for i := range req.(*kmsg.ProduceRequest).Topics {
			t := &req.(*kmsg.ProduceRequest).Topics[i]
			for j := range t.Partitions {
				stamp(t.Partitions[j].Records, now)
			}
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.GetTelemetrySubscriptions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return noTelemetry(req.(*kmsg.GetTelemetrySubscriptionsRequest)), nil, true
	})
	return &embeddedBroker{Cluster: c, failed: failed}, nil
}

// telemetryAskAgain is how long a client waits before it asks again for
// the metrics the broker wants: Apache Kafka's default push interval.
const telemetryAskAgain = 5 * time.Minute

// noTelemetry answers a GetTelemetrySubscriptions request as Apache Kafka
// does when no metrics subscription matches the client: no metrics
// requested, ask again later.
func noTelemetry(req *kmsg.GetTelemetrySubscriptionsRequest) *kmsg.GetTelemetrySubscriptionsResponse {
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	resp.ClientInstanceID = req.ClientInstanceID
	if resp.ClientInstanceID == [16]byte{} {
		resp.ClientInstanceID = uuid.New()
	}
	resp.PushIntervalMillis = int32(telemetryAskAgain.Milliseconds())
	resp.TelemetryMaxBytes = 1 << 20
	return resp
}

// acceptListener is the embedded broker's listener. An accept error that
// passes (the process is out of file descriptors, a connection was
// aborted before it was taken) is logged, counted and waited out, with a
// back-off from acceptRetryMin to acceptRetryMax as net/http's server
// does; any other error but the listener's close is sent on failed and
// returned, which ends kfake's accept loop.
type acceptListener struct {
	net.Listener
	log     *slog.Logger
	failed  chan<- error
	retries metric.Int64Counter
}

const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

func newAcceptListener(ln net.Listener, log *slog.Logger, failed chan<- error) *acceptListener {
	m := otel.GetMeterProvider().Meter("github.com/argosyproj/argosy/cmd/argosy-dev")
	return &acceptListener{Listener: ln, log: log, failed: failed,
		retries: events.Instrument(m.Int64Counter("argosy.dev.broker.accept.errors",
			metric.WithDescription("Accept errors the embedded broker waited out (out of file descriptors, aborted connections).")))}
}

// Accept returns the next connection, waiting out the errors that pass.
func (l *acceptListener) Accept() (net.Conn, error) {
	wait := acceptRetryMin
	for {
		conn, err := l.Listener.Accept()
		switch {
		case err == nil:
			return conn, nil
		case errors.Is(err, net.ErrClosed):
			return nil, err
		case !acceptErrorPasses(err):
			select {
			case l.failed <- err:
			default: // one is enough to stop the process
			}
			return nil, err
		}
		l.retries.Add(context.Background(), 1)
		l.log.Warn("embedded broker: accept failed; trying again", "err", err, "in", wait,
			"hint", "out of file descriptors? raise the limit (ulimit -n) or run fewer --clusters")
		time.Sleep(wait)
		wait = min(2*wait, acceptRetryMax)
	}
}

// acceptErrorPasses reports whether an accept error may pass if waited
// out.
func acceptErrorPasses(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stamp sets the first and last timestamps of every v2 record batch in
// records to now, keeping its records' offsets from the first, and
// recomputes its checksum. Batches it cannot read are left for the broker
// to refuse.
func stamp(records []byte, now int64) {
	const (
		lengthAt = 8  // batchLength int32, after baseOffset int64
		magicAt  = 16 // magic int8
		crcAt    = 17 // crc int32, covering attributes to the end
		attrsAt  = 21 // attributes int16, then lastOffsetDelta int32
		firstAt  = 27 // firstTimestamp int64
		maxAt    = 35 // maxTimestamp int64
		control  = 0x20
	)
	for len(records) > maxAt+8 {
		n := int(int32(binary.BigEndian.Uint32(records[lengthAt:]))) + 12
		if n <= maxAt+8 || n > len(records) || records[magicAt] != 2 {
			return
		}
		b := records[:n]
		if binary.BigEndian.Uint16(b[attrsAt:])&control == 0 {
			first, last := int64(binary.BigEndian.Uint64(b[firstAt:])), int64(binary.BigEndian.Uint64(b[maxAt:]))
			binary.BigEndian.PutUint64(b[firstAt:], uint64(now))
			binary.BigEndian.PutUint64(b[maxAt:], uint64(now+max(last-first, 0)))
			binary.BigEndian.PutUint32(b[crcAt:], crc32.Checksum(b[attrsAt:], castagnoli))
		}
		records = records[n:]
	}
}
