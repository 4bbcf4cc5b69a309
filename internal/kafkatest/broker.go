// Package kafkatest runs a real Apache Kafka broker for tests: one combined
// broker and controller KRaft node on 127.0.0.1, started from Apache Kafka's
// jars, which Maven resolves from Maven Central into the user's cache on first
// use.
//
// A test package starts it once from TestMain with Main, then gives each test
// its own topics with NewTopics. When KAFKA_BOOTSTRAP is set, tests use that
// broker instead and nothing is started.
package kafkatest

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/internal/testproc"
	"github.com/argosyproj/argosy/internal/toolcache"
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

// Broker is a running single-node Kafka.
type Broker struct {
	// Addr is the bootstrap address, host:port.
	Addr string
	// Dir holds the broker's configuration, data and log.
	Dir string

	proc *testproc.Proc
}

// Jars resolves Kafka's runtime jars into the cache, once, and returns the
// directory that holds them.
func Jars(ctx context.Context) (string, error) {
	return toolcache.MavenJars(ctx, "kafka-"+Version, pom)
}

// Start formats and starts a broker in a new temporary directory and waits
// until it answers. The caller must Stop it.
func Start(ctx context.Context) (*Broker, error) {
	lib, err := Jars(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve kafka %s jars: %w", Version, err)
	}
	dir, err := os.MkdirTemp("", "argosy-kafka-*")
	if err != nil {
		return nil, fmt.Errorf("kafka dir: %w", err)
	}
	// Free ports can be taken between probing and binding; try again then.
	var lastErr error
	for range 3 {
		b, err := start(ctx, lib, dir)
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

func start(ctx context.Context, lib, dir string) (*Broker, error) {
	ports, err := testproc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.RemoveAll(data); err != nil {
		return nil, fmt.Errorf("clean kafka data: %w", err)
	}
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, serverProperties(ports[0], ports[1], data), 0o600); err != nil {
		return nil, fmt.Errorf("write server.properties: %w", err)
	}
	logCfg := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(logCfg, []byte(log4jConfig), 0o600); err != nil {
		return nil, fmt.Errorf("write log4j2.properties: %w", err)
	}
	jvm := []string{"-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + logCfg, "-cp", filepath.Join(lib, "*")}
	format := exec.CommandContext(ctx, "java", append(jvm, "kafka.tools.StorageTool", "format", "--ignore-formatted",
		"--cluster-id", clusterID(), "--config", props)...)
	format.Dir = dir
	if _, err := toolcache.Run(format); err != nil {
		return nil, fmt.Errorf("kafka storage format: %w", err)
	}
	p, err := testproc.Start(dir, "broker", "java", append(jvm, "kafka.Kafka", props), nil)
	if err != nil {
		return nil, err
	}
	b := &Broker{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), Dir: dir, proc: p}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.WaitFor(ctx, b.ready); err != nil {
		return nil, errors.Join(fmt.Errorf("kafka did not become ready: %w", err), p.Stop(0))
	}
	return b, nil
}

func serverProperties(port, ctrlPort int, data string) []byte {
	var buf bytes.Buffer
	for _, kv := range [][2]string{
		{"process.roles", "broker,controller"},
		{"node.id", "1"},
		{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", ctrlPort)},
		{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrlPort)},
		{"advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)},
		{"controller.listener.names", "CONTROLLER"},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
		{"log.dirs", data},
		{"num.partitions", "1"},
		{"auto.create.topics.enable", "false"},
		{"offsets.topic.replication.factor", "1"},
		{"offsets.topic.num.partitions", "4"},
		{"transaction.state.log.replication.factor", "1"},
		{"transaction.state.log.min.isr", "1"},
		{"transaction.state.log.num.partitions", "4"},
		{"share.coordinator.state.topic.replication.factor", "1"},
		{"share.coordinator.state.topic.min.isr", "1"},
		{"group.initial.rebalance.delay.ms", "0"},
		{"num.network.threads", "2"},
		{"num.io.threads", "4"},
	} {
		fmt.Fprintf(&buf, "%s=%s\n", kv[0], kv[1])
	}
	return buf.Bytes()
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

// Stop ends the broker (SIGTERM, then SIGKILL after 20 s) and removes its
// directory.
func (b *Broker) Stop() error {
	return errors.Join(b.proc.Stop(20*time.Second), os.RemoveAll(b.Dir))
}

// clusterID returns a random Kafka cluster id: 16 bytes, URL-safe base64
// without padding, as kafka-storage random-uuid prints.
func clusterID() string {
	var id [16]byte
	rand.Read(id[:]) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(id[:])
}
