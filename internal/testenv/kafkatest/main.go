package kafkatest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Runner runs tests: a *testing.M, or another helper's Main wrapped around
// one, so that one TestMain can start several servers.
type Runner interface{ Run() int }

// RunFunc adapts a function to Runner.
type RunFunc func() int

// Run implements Runner.
func (f RunFunc) Run() int { return f() }

// EnvBootstrap names the variable that points tests at an existing broker.
const EnvBootstrap = "KAFKA_BOOTSTRAP"

var (
	mu        sync.Mutex
	bootstrap string
)

// Main is TestMain for packages that need Kafka: it starts a broker (unless
// KAFKA_BOOTSTRAP is set), runs the tests and stops the broker. If the broker
// cannot start, every test fails: Main prints why and exits non-zero.
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }
func Main(m Runner) int {
	if addr := os.Getenv(EnvBootstrap); addr != "" {
		setBootstrap(addr)
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	started := time.Now()
	b, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kafkatest: cannot start Apache Kafka %s: %v\n", Version, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "Apache Kafka %s ready on %s in %s (kafkatest)\n", Version, b.Addr, time.Since(started).Round(time.Millisecond))
	setBootstrap(b.Addr)
	code := m.Run()
	if err := b.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: stop broker: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func setBootstrap(addr string) {
	mu.Lock()
	defer mu.Unlock()
	bootstrap = addr
}

// Bootstrap returns the broker address. It fails the test if Main did not run.
func Bootstrap(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if bootstrap == "" {
		t.Fatal("kafkatest: no broker; call kafkatest.Main from TestMain")
	}
	return bootstrap
}

// Client returns a client of the test broker, closed when the test ends.
func Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(Bootstrap(t), ",")...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Prefix returns a name prefix unique to this test run and test, for topics
// and groups. Characters that topic names cannot hold become '_', and '/'
// becomes '.'.
func Prefix(t testing.TB) string {
	var b [4]byte
	rand.Read(b[:]) // never fails since Go 1.24
	name := strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, t.Name())
	return fmt.Sprintf("t.%s.%x.", name, b)
}

// DeleteAtEnd deletes topics when the test ends.
func DeleteAtEnd(t testing.TB, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(Client(t))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopics(ctx, topics...); err != nil {
			t.Logf("delete topics %v: %v", topics, err)
		}
	})
}

// JavaCommand returns a java command whose classpath is Kafka's jars, for
// running Kafka's own tools (or a single-file Java program) against the test
// broker.
func JavaCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	lib, err := Jars(ctx)
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, "java", append([]string{"-Xmx256m", "-cp", filepath.Join(lib, "*")}, args...)...), nil
}

// Committed reads every committed record of topic, as a read-committed
// consumer sees them once every transaction in it has ended: it reads to
// the high watermark, which a read-committed fetch reaches only when the
// commit markers (written by the broker after a commit returns) are in.
// Transaction markers are left out.
func Committed(t testing.TB, topic string) []*kgo.Record {
	t.Helper()
	ends, err := kadm.NewClient(Client(t)).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl := Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (partitions still to read: %v)", topic, ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return out
}
