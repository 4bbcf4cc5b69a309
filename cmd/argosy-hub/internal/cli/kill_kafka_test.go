//go:build integration

package cli_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/schemas"
)

func TestMain(m *testing.M) {
	code := kafkatest.Main(kafkatest.RunFunc(func() int { return kubetest.Main(m) }))
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var binDir string

// hubBinary builds argosy-hub with the fault hooks once for the package:
// the hooks do nothing unless their variable is set, and the build links
// Argo CD's module, which takes a while.
var hubBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "argosy-hub-test-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "argosy-hub")
	cmd := exec.Command("go", "build", "-tags", "argosy_testhooks", "-o", bin, "github.com/argosyproj/argosy/cmd/argosy-hub")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %w\n%s", err, out)
	}
	return bin, nil
})

func buildHub(t testing.TB) string {
	t.Helper()
	bin, err := hubBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// fixture is a hub key, a tokens file and topics, for hub processes.
type fixture struct {
	t      testing.TB
	dir    string
	prefix string
	topics events.Topics
	token  string
	bin    string
	// broker is the bootstrap address the hubs connect to.
	broker string
	// metrics is each started process's metrics address, by name.
	metrics map[string]string
}

func newFixture(t testing.TB, bin string) *fixture {
	t.Helper()
	return newFixtureOn(t, bin, kafkatest.Bootstrap(t), kafkatest.Client(t))
}

// newFixtureOn is newFixture on the broker at addr, which cl reaches.
func newFixtureOn(t testing.TB, bin, addr string, cl *kgo.Client) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), prefix: kafkatest.Prefix(t), bin: bin, broker: addr, metrics: map[string]string{}}
	f.topics = events.DefaultTopics(f.prefix)
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(cl), f.topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	if addr == kafkatest.Bootstrap(t) { // a broker of the test's own goes with it
		kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(f.topics))...)
	}
	io := cmdkit.IOStreams{Out: new(discard), Err: new(discard)}
	root := cli.NewRoot(io)
	root.SetArgs([]string{"keygen", "--dir", f.dir})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := &capture{}
	root = cli.NewRoot(cmdkit.IOStreams{Out: out, Err: new(discard)})
	root.SetArgs([]string{"token", "new", "root", "--role", "admin", "--file", filepath.Join(f.dir, "tokens.yaml")})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.token = out.line()
	return f
}

// start runs a hub process with env and returns its client once ready.
func (f *fixture) start(name string, env ...string) (*api.Client, *testproc.Proc) {
	c, p, _ := f.startWith(name, nil, env...)
	return c, p
}

// startWith runs a hub process with extra arguments and env, and returns
// its client and URL once ready.
func (f *fixture) startWith(name string, args []string, env ...string) (*api.Client, *testproc.Proc, string) {
	f.t.Helper()
	ports, err := testproc.FreePorts(2)
	if err != nil {
		f.t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	f.metrics[name] = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	proc, err := testproc.Start(f.dir, name, f.bin, append([]string{"run", "--kafka-brokers", f.broker,
		"--topic-prefix", f.prefix, "--hub-key", filepath.Join(f.dir, cli.PrivateKeyFile), "--tokens", filepath.Join(f.dir, "tokens.yaml"),
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1])}, args...), env)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if err := proc.Stop(10 * time.Second); err != nil {
			f.t.Logf("%s: %v", name, err)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url + "/readyz") //nolint:noctx // a loopback probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s never ready: %v\n%s", name, err, proc.LogTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c, err := api.NewClient(url, f.token, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return c, proc, url
}

// TestKilledBetweenDecisionAndCommit runs two hub processes on the real
// broker. One is killed (SIGKILL, by its own hook) after it decided a
// write, once at the point where it hands the record to the Kafka client
// and once after the broker acknowledged it, inside the open transaction.
// Its caller gets no answer. The other replica then gets the same
// conflicting write, expecting the same generation: it is accepted, and
// the log holds exactly it: the killed replica's write is not in what any
// reader sees.
func TestKilledBetweenDecisionAndCommit(t *testing.T) {
	bin := buildHub(t)
	for _, at := range []string{"buffered", "acked"} {
		t.Run(at, func(t *testing.T) {
			f := newFixture(t, bin)
			good, _ := f.start("hub-good")
			doomed, proc := f.start("hub-doomed", cli.EnvCrash+"="+at)
			signing, sealing := clusterKeys(t)
			if _, err := good.RegisterCluster(t.Context(), "c1", api.ClusterRequest{SigningKey: signing, SealingKey: sealing}, api.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			one := int64(1)
			req := api.ClusterRequest{Labels: map[string]string{"by": "doomed"}, ExpectedGeneration: &one}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if res, err := doomed.RegisterCluster(ctx, "c1", req, api.WriteOptions{IdempotencyKey: "k"}); err == nil {
				t.Fatalf("the doomed replica answered %+v; it should have died first", res)
			}
			if exited, _ := proc.WaitExit(10 * time.Second); !exited {
				t.Fatal("the doomed replica did not die")
			}
			req.Labels["by"] = "good"
			res, err := good.RegisterCluster(t.Context(), "c1", req, api.WriteOptions{IdempotencyKey: "k"})
			if err != nil {
				t.Fatalf("the surviving replica refused the write the dead one never committed: %v", err)
			}
			regs := registrations(t, f)
			if len(regs) != 2 || regs[1].Event.ID() != res.Events[0].ID {
				t.Fatalf("the log holds %d registrations, want the first and the surviving replica's", len(regs))
			}
			if got := regs[1].Data.(*schemas.ClusterRegistered).Labels["by"]; got != "good" {
				t.Errorf("the log's update is by %q, want the surviving replica's", got)
			}
		})
	}
}

// registrations reads the config topic as a projector would: read
// committed, verified against the hub's key.
func registrations(t *testing.T, f *fixture) []*events.Decoded {
	t.Helper()
	pub, err := events.LoadPublicKey(filepath.Join(f.dir, cli.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", pub))), events.WithTopics(f.topics))
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Decoded
	for _, r := range kafkatest.Committed(t, f.topics[events.TopicConfig]) {
		d, err := dec.Decode(t.Context(), r)
		if err != nil {
			t.Fatalf("config@%d: %v", r.Offset, err)
		}
		if d.Spec.Type == events.TypeClusterRegistered {
			out = append(out, d)
		}
	}
	return out
}
