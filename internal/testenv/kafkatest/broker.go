// Package kafkatest runs real Apache Kafka brokers for tests: combined
// broker and controller KRaft nodes on 127.0.0.1, started from Apache Kafka's
// jars, which Maven resolves from Maven Central into the user's cache on first
// use.
//
// A test package starts one shared broker from TestMain with Main, then names
// each test's topics with Prefix. When KAFKA_BOOTSTRAP is set, tests
// use that broker instead and nothing is started.
//
// A test that needs a broker of its own, one it can stop and restart or one
// with TLS and SASL listeners, calls StartBroker.
package kafkatest

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
)

// Version is the Apache Kafka version the tests run against. It must equal
// kafka.version in pom.xml.
const Version = "4.3.1"

//go:embed pom.xml
var pom []byte

const log4jConfig = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = warn
logger.apache.name = org.apache.kafka
logger.apache.level = warn
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = info
`

// stopGrace is how long a broker has to shut down after SIGTERM before it
// gets SIGKILL.
const stopGrace = 20 * time.Second

// Broker is a single-node Kafka. It can be stopped and started again on the
// same ports with the same data. Its methods are not safe for concurrent use.
type Broker struct {
	// Addr is the bootstrap address of the PLAINTEXT listener, host:port.
	Addr string
	// Dir holds the broker's configuration, data, TLS material and logs.
	Dir string
	// PKI is the broker's TLS material when it has an SSL or SASL_SSL
	// listener, and nil otherwise.
	PKI *PKI

	listeners map[Listener]string
	node      node
	jvm       []string // java's arguments before the main class
	props     string
	starts    int
	proc      *testproc.Proc // nil while stopped
}

// Jars resolves Kafka's runtime jars into the cache, once, and returns the
// directory that holds them.
func Jars(ctx context.Context) (string, error) {
	return toolcache.MavenJars(ctx, "kafka-"+Version, pom)
}

// Start formats and starts a broker in a new temporary directory and waits
// until it answers. The caller must Close it.
func Start(ctx context.Context, opts ...Option) (*Broker, error) {
	cfg, lib, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	return startNode(ctx, lib, cfg, node{id: 1, clusterID: clusterID()})
}

// prepare checks the options and resolves Kafka's jars.
func prepare(ctx context.Context, opts []Option) (*config, string, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, "", err
	}
	lib, err := Jars(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("resolve kafka %s jars: %w", Version, err)
	}
	return &cfg, lib, nil
}

// startNode creates node n in a new temporary directory and starts it.
func startNode(ctx context.Context, lib string, cfg *config, n node) (*Broker, error) {
	dir, err := os.MkdirTemp("", "argosy-kafka-*")
	if err != nil {
		return nil, fmt.Errorf("kafka dir: %w", err)
	}
	// Free ports can be taken between probing and binding; try again then.
	var lastErr error
	for range 3 {
		b, err := create(ctx, lib, dir, cfg, n)
		if err == nil {
			return b, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(lastErr, os.RemoveAll(dir))
}

// StartBroker starts a broker of the test's own, which the test may stop and
// start again, and closes it when the test ends. It fails the test if the
// broker cannot start.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	b, err := Start(ctx, opts...)
	if err != nil {
		t.Fatalf("kafkatest: cannot start Apache Kafka %s: %v", Version, err)
	}
	t.Logf("Apache Kafka %s ready on %s in %s", Version, b.Addr, time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("kafkatest: close broker: %v", err)
		}
	})
	return b
}

// node is a broker's place in its cluster: its node id, the cluster's id,
// and the port of the cluster's controller, which is this node unless it
// is a broker only.
type node struct {
	id         int
	clusterID  string
	brokerOnly bool
	ctrlPort   int
	// rack is the node's broker.rack; empty: none.
	rack string
}

// create writes a broker's configuration and TLS material into dir, formats
// its storage and starts it.
func create(ctx context.Context, lib, dir string, cfg *config, n node) (*Broker, error) {
	extra := cfg.extra()
	ports, err := testproc.FreePorts(2 + len(extra))
	if err != nil {
		return nil, err
	}
	if !n.brokerOnly {
		n.ctrlPort = ports[1]
	}
	data := filepath.Join(dir, "data")
	if err := os.RemoveAll(data); err != nil {
		return nil, fmt.Errorf("clean kafka data: %w", err)
	}
	b := &Broker{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), Dir: dir, props: filepath.Join(dir, "server.properties"), node: n,
		listeners: map[Listener]string{Plaintext: fmt.Sprintf("127.0.0.1:%d", ports[0])}}
	for i, l := range extra {
		b.listeners[l] = fmt.Sprintf("127.0.0.1:%d", ports[2+i])
	}
	if cfg.tls() {
		tlsDir := filepath.Join(dir, "tls")
		if err := os.MkdirAll(tlsDir, 0o700); err != nil {
			return nil, fmt.Errorf("tls dir: %w", err)
		}
		if b.PKI, err = NewPKI(tlsDir); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(b.props, serverProperties(b, cfg, n, data), 0o600); err != nil {
		return nil, fmt.Errorf("write server.properties: %w", err)
	}
	logCfg := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(logCfg, []byte(log4jConfig), 0o600); err != nil {
		return nil, fmt.Errorf("write log4j2.properties: %w", err)
	}
	b.jvm = []string{"-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + logCfg, "-cp", filepath.Join(lib, "*")}
	args := append(append([]string{}, b.jvm...), "kafka.tools.StorageTool", "format", "--ignore-formatted",
		"--cluster-id", n.clusterID, "--config", b.props)
	format := exec.CommandContext(ctx, "java", append(args, cfg.scramArgs()...)...)
	format.Dir = dir
	if _, err := toolcache.Run(format); err != nil {
		return nil, fmt.Errorf("kafka storage format: %w", err)
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Start starts a stopped broker again, on the same ports with the same data,
// and waits until it answers.
func (b *Broker) Start(ctx context.Context) error {
	if b.proc != nil {
		return errors.New("kafka broker is already running")
	}
	b.starts++
	name := "broker"
	if b.starts > 1 {
		name = fmt.Sprintf("broker.%d", b.starts)
	}
	p, err := testproc.Start(b.Dir, name, "java", append(append([]string{}, b.jvm...), "kafka.Kafka", b.props), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.WaitFor(ctx, b.ready); err != nil {
		return errors.Join(fmt.Errorf("kafka did not become ready: %w", err), p.Stop(0))
	}
	b.proc = p
	return nil
}

// Stop ends the broker's process (SIGTERM, then SIGKILL after 20 s or when
// ctx ends, whichever is first) and keeps its data, so that Start can start
// it again. Stopping a stopped broker does nothing.
func (b *Broker) Stop(ctx context.Context) error {
	if b.proc == nil {
		return nil
	}
	grace := stopGrace
	if d, ok := ctx.Deadline(); ok {
		grace = max(0, min(grace, time.Until(d)))
	}
	err := b.proc.Stop(grace)
	b.proc = nil
	return err
}

// Restart stops the broker and starts it again.
func (b *Broker) Restart(ctx context.Context) error {
	if err := b.Stop(ctx); err != nil {
		return err
	}
	return b.Start(ctx)
}

// Close stops the broker and removes its directory.
func (b *Broker) Close() error {
	return errors.Join(b.Stop(context.Background()), os.RemoveAll(b.Dir))
}

// Pid returns the broker's process id, or 0 while it is stopped.
func (b *Broker) Pid() int {
	if b.proc == nil {
		return 0
	}
	return b.proc.Pid()
}

// ListenerAddr returns the address of the broker's listener l, or "" if it
// has none.
func (b *Broker) ListenerAddr(l Listener) string { return b.listeners[l] }

// Client returns a client of the broker's PLAINTEXT listener, closed when
// the test ends.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ready reports whether the broker serves metadata and its controller has
// elected itself, which topic creation needs.
func (b *Broker) ready(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).Metadata(ctx)
	if err != nil {
		return err
	}
	if len(m.Brokers) == 0 || m.Controller < 0 {
		return errors.New("no broker or no controller yet")
	}
	return nil
}

// clusterID returns a random Kafka cluster id: 16 bytes, URL-safe base64
// without padding, as kafka-storage random-uuid prints. Like Kafka's own
// Uuid.randomUuid, it never begins with '-': the storage tool's argument
// parser would take such an id for an option and refuse to format.
func clusterID() string {
	for {
		var id [16]byte
		rand.Read(id[:]) // never fails since Go 1.24
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s
		}
	}
}
