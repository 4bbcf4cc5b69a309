package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/cmd/internal/hubkey"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/system"
)

// DevOptions are the flags of argosy-dev.
type DevOptions struct {
	IO          cmdkit.IOStreams
	Clusters    int
	DataDir     string
	Broker      string
	BrokerPort  int
	TopicPrefix string
	Listen      string
	MetricsAddr string
	Reset       bool
	Offline     time.Duration
	Quiet       bool
	// ReportEvery is how often the process logs its memory, goroutines
	// and open files (0: never).
	ReportEvery time.Duration
}

// DevReady is what argosy-dev writes to DIR/dev.json once it serves:
// what the argosy CLI needs to make a context for it.
type DevReady struct {
	URL      string   `json:"url"`
	Token    string   `json:"token"`
	DataDir  string   `json:"dataDir"`
	Clusters []string `json:"clusters"`
	PID      int      `json:"pid"`
	// Log is how to read the log directly, for argosy replay and export.
	Log DevLog `json:"log"`
}

// DevLog is how to read argosy dev's log: its broker, the prefix of its
// topics, the hub's public key file, and whether the broker stamps
// records with their CreateTime (the embedded one does).
type DevLog struct {
	KafkaBrokers     string `json:"kafkaBrokers"`
	TopicPrefix      string `json:"topicPrefix,omitempty"`
	HubKey           string `json:"hubKey"`
	AcceptCreateTime bool   `json:"acceptCreateTime,omitempty"`
}

// DevReadyFile is DevReady's file in the data directory.
const DevReadyFile = "dev.json"

// NewCmdDev returns argosy-dev's command, the root of its tree.
func NewCmdDev(io cmdkit.IOStreams, runF func(context.Context, *DevOptions) error) *cobra.Command {
	opts := &DevOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "argosy-dev",
		Short: "Run the whole system in this process, with a simulated fleet",
		Long: `argosy-dev runs all of Argosy in one process, with nothing else to install or run:
an embedded Kafka-compatible broker (its log in --data-dir, so the fleet and
its history survive a restart), the hub with a generated key and admin
token, the projector on a SQLite store, and a fleet of --clusters simulated
clusters labelled with env, region and tier. Each cluster runs the real
spoke agent, joined through the real join flow; only its Argo CD is
simulated (docs/dev.md says how it behaves). Every few minutes a cluster
goes offline for a while and comes back.

Once ready it prints the hub's URL, the admin token and commands to try,
and writes them to DIR/dev.json. The hub's URL in a browser is the web
dashboard; log in with the token. argosy dev runs this and writes a context
for the argosy CLI. Ctrl-C stops everything cleanly; --reset starts over.`,
		Example: `  argosy-dev
  argosy-dev --clusters 50 --listen 127.0.0.1:9080
  argosy-dev --broker 127.0.0.1:9092   # a real Kafka instead of the embedded one
  argosy-dev --reset`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Clusters < 1 || opts.Clusters > 10000 {
				return &cmdkit.FlagError{Err: fmt.Errorf("--clusters %d: want 1 to 10000", opts.Clusters)}
			}
			if opts.DataDir == "" {
				return &cmdkit.FlagError{Err: errors.New("--data-dir must not be empty")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return devRun(c.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Clusters, "clusters", 20, "how many simulated clusters")
	f.StringVar(&opts.DataDir, "data-dir", cmdkit.DevDir(), "where the broker's log, the views, the keys and the fleet live (env ARGOSY_DEV_DIR)")
	f.StringVar(&opts.Broker, "broker", "", "a Kafka to use (host:port) instead of the embedded broker")
	f.StringVar(&opts.TopicPrefix, "topic-prefix", "", "prefix of Argosy's topic names, to share a --broker")
	f.IntVar(&opts.BrokerPort, "broker-port", 0, "port of the embedded broker on 127.0.0.1 (default: any free one)")
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "address of the hub's API")
	f.StringVar(&opts.MetricsAddr, "metrics-address", "127.0.0.1:9467", "address of /metrics and /healthz")
	f.BoolVar(&opts.Reset, "reset", false, "delete --data-dir first: a new broker log, new keys, a new fleet")
	f.DurationVar(&opts.Offline, "offline-every", 3*time.Minute, "how often, on average, a cluster goes offline for a while (0: never)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the ready message and errors")
	f.DurationVar(&opts.ReportEvery, "report-every", time.Minute, "how often to log the process's memory, goroutines and open files (0: never)")
	return cmd
}

func devRun(ctx context.Context, o *DevOptions) error {
	level := slog.LevelWarn
	if !o.Quiet {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(o.IO.Err, &slog.HandlerOptions{Level: level}))
	if limit, ok := openFileLimit(); ok {
		if err := checkDescriptors(o.Clusters, o.Broker == "", limit); err != nil {
			return err
		}
	}
	if err := devDir(o); err != nil {
		return err
	}
	signer, token, tokens, err := devCredentials(filepath.Join(o.DataDir, credentialsDir))
	if err != nil {
		return err
	}
	k, err := devKafka(ctx, o, log)
	if err != nil {
		return err
	}
	defer k.close()
	tel, err := telemetry.Setup(ctx, "argosy-dev", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	store, err := sqlstore.OpenSQLite(ctx, filepath.Join(o.DataDir, "views.db"))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer store.Close()
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}
	ln, err := net.Listen("tcp", o.Listen) // here, so that a taken address names the flag
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	sys, err := system.New(k.conn, signer, anchors, system.WithTopicPrefix(o.TopicPrefix), system.WithListener(ln),
		system.WithLogger(log), system.WithTokens(tokens...), system.WithStore(store, read.WithLogger(log)), system.WithDashboard(),
		system.WithFold(""), system.WithClientOpts(tel.KafkaOpts), system.WithDecoderOptions(k.decoder...),
		system.WithOpsServer(o.MetricsAddr, func(ready system.Check) http.Handler { return tel.Handler(ready) }))
	if err != nil {
		if cerr := ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
		return err
	}
	f := devFleet{o: o, sys: sys, token: token, hubKey: signer.Public(), kafka: k, log: log}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sys.Run(gctx) })
	g.Go(func() error { return f.run(gctx) })
	g.Go(func() error { return k.watch(gctx) })
	g.Go(func() error { return reportProcess(gctx, log, o.ReportEvery) })
	err = g.Wait()
	if rerr := os.Remove(filepath.Join(o.DataDir, DevReadyFile)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(o.IO.Err, "argosy dev stopped; its data stays in "+o.DataDir)
	}
	return err
}

// devDir makes the data directory, after deleting it with --reset, and
// removes a stale ready file, which would point argosy dev at nothing.
func devDir(o *DevOptions) error {
	if o.Reset {
		if err := os.RemoveAll(o.DataDir); err != nil {
			return fmt.Errorf("--reset: %w", err)
		}
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(o.DataDir, DevReadyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dev: %w", err)
	}
	return nil
}

// devKafkaConn is the Kafka argosy dev runs on: --broker, or the embedded
// broker, whose records the components must accept as it stamps them.
type devKafkaConn struct {
	seed    string
	conn    []kgo.Opt
	topics  events.Topics
	decoder []events.Option
	close   func()
	// failed receives the error the embedded broker stopped taking
	// connections on; nil (never) with --broker.
	failed <-chan error
}

// watch returns when ctx ends, or with an error that says so when the
// embedded broker stops taking connections: without it nothing works, and
// a process that stayed up would leave the argosy CLI waiting.
func (k *devKafkaConn) watch(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-k.failed:
		return fmt.Errorf("the embedded broker stopped taking connections (%w); argosy dev cannot go on without it: start it again", err)
	}
}

// devKafka starts the embedded broker unless --broker names one, and makes
// Argosy's topics there.
func devKafka(ctx context.Context, o *DevOptions, log *slog.Logger) (*devKafkaConn, error) {
	k := &devKafkaConn{topics: events.DefaultTopics(o.TopicPrefix), close: func() {}}
	seed := o.Broker
	if seed == "" {
		b, err := startBroker(filepath.Join(o.DataDir, "kafka"), o.BrokerPort, log, net.Listen)
		if err != nil {
			return nil, err
		}
		k.close, k.decoder, seed, k.failed = b.Close, []events.Option{events.AcceptCreateTime()}, b.ListenAddrs()[0], b.failed
	}
	k.seed, k.conn = seed, []kgo.Opt{kgo.SeedBrokers(seed)}
	if err := devTopics(ctx, k.conn, k.topics); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// devFleet is the simulated fleet of argosy dev.
type devFleet struct {
	o      *DevOptions
	sys    *system.System
	token  string
	hubKey ed25519.PublicKey
	kafka  *devKafkaConn
	log    *slog.Logger
}

// run waits until the system is ready, joins the fleet, writes the ready
// file and prints it, and runs the fleet until ctx ends.
func (f devFleet) run(ctx context.Context) error {
	if err := f.sys.WaitReady(ctx); err != nil {
		return nil // ctx ended: stopping, or the system failed and says why
	}
	client, err := api.NewClient(f.sys.URL(), f.token, nil)
	if err != nil {
		return err
	}
	fleet, err := sim.NewFleet(sim.FleetConfig{Clusters: f.o.Clusters, Prefix: "sim", Hub: client, HubKey: f.hubKey, Conn: f.kafka.conn,
		Topics: f.kafka.topics, TopicPrefix: f.o.TopicPrefix, Dir: filepath.Join(f.o.DataDir, "fleet"), Offline: f.o.Offline,
		OfflineFor: [2]time.Duration{30 * time.Second, 90 * time.Second},
		Log:        f.log.With("component", "fleet"), AgentOpts: []spoke.Option{spoke.WithDecoderOptions(f.kafka.decoder...)}})
	if err != nil {
		return err
	}
	if err := fleet.Join(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	dir, err := filepath.Abs(f.o.DataDir) // the context is read from anywhere
	if err != nil {
		return err
	}
	ready := DevReady{URL: f.sys.URL(), Token: f.token, DataDir: f.o.DataDir, Clusters: fleet.Names(), PID: os.Getpid(),
		Log: DevLog{KafkaBrokers: f.kafka.seed, TopicPrefix: f.o.TopicPrefix, HubKey: filepath.Join(dir, credentialsDir, hubkey.PublicKeyFile),
			AcceptCreateTime: len(f.kafka.decoder) > 0}}
	if err := writeReady(f.o.DataDir, ready); err != nil {
		return err
	}
	printReady(f.o.IO, ready)
	return fleet.Run(ctx)
}

// credentialsDir is the data directory's directory of the hub's key and
// tokens.
const credentialsDir = "hub"

// devCredentials makes the hub's key and an admin token in dir the first
// time, and reads them after.
func devCredentials(dir string) (*events.Signer, string, []auth.Token, error) {
	keyFile, tokenFile, tokensFile := filepath.Join(dir, hubkey.PrivateKeyFile), filepath.Join(dir, "admin.token"), filepath.Join(dir, "tokens.yaml")
	if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
		if _, err := hubkey.Write(dir); err != nil {
			return nil, "", nil, err
		}
		tok, entry, err := auth.NewToken("admin", auth.RoleAdmin, nil, "")
		if err != nil {
			return nil, "", nil, err
		}
		b, err := yaml.Marshal(auth.TokenFile{Tokens: []auth.Token{entry}})
		if err != nil {
			return nil, "", nil, err
		}
		if err := os.WriteFile(tokensFile, b, 0o600); err != nil {
			return nil, "", nil, err
		}
		if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
			return nil, "", nil, err
		}
	}
	signer, err := hubkey.Load(keyFile)
	if err != nil {
		return nil, "", nil, err
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, "", nil, fmt.Errorf("dev: %w (argosy dev --reset starts over)", err)
	}
	tokens, err := auth.LoadTokens(tokensFile)
	if err != nil {
		return nil, "", nil, err
	}
	return signer, strings.TrimSpace(string(tok)), tokens, nil
}

// devTopics makes Argosy's topics if they are missing: four config
// partitions, four status partitions, one replica.
func devTopics(ctx context.Context, conn []kgo.Opt, topics events.Topics) error {
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := events.EnsureTopics(ctx, kadm.NewClient(cl), topics, events.TopicPlan(4, 4), 1, 1); err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	return nil
}

func writeReady(dir string, r DevReady) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, DevReadyFile)
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func printReady(io cmdkit.IOStreams, r DevReady) {
	fmt.Fprintf(io.Out, `
Argosy is ready: the hub, the projector and %d simulated clusters, in one process.
  hub:    %s
  web:    %s/ (log in with the token)
  token:  %s
  data:   %s

Try, in another terminal (argosy dev makes the context "dev" for these; else run argosy login %s --token TOKEN first):
  argosy fleet
  argosy app apply -f docs/examples/guestbook.yaml --selector env=staging --wait
  argosy app placements guestbook
  argosy app status guestbook
  argosy audit
  argosy report deployments --by app

Ctrl-C stops it; the fleet and its history are kept for the next run (argosy dev --reset starts over).
`, len(r.Clusters), r.URL, r.URL, r.Token, r.DataDir, r.URL)
}
