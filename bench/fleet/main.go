// Command fleet is Argosy's fleet-scale benchmark: `make bench-fleet`.
//
// It runs the real system on the real Apache Kafka broker the tests use
// (started from its cached jars, or --kafka): the argosy-hub process, the
// argosy projector process on SQLite, and simulated clusters in spoke-pack
// processes (this program's `spokes` subcommand), each cluster a real
// spoke.Agent on a simulated Argo CD (package sim), joined through
// the hub's API. For each fleet size it measures the fan-out latency of
// single-cluster changes made at a set rate, the projector's status
// ingestion, the processes' memory and CPU, and a new spoke's bootstrap;
// once, the bytes a status change takes on the wire with each codec. It
// writes bench/results/<date>.md with plots. docs/bench.md says how to read
// it.
//
//	go run ./bench/fleet -sizes 100,1000,10000
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "spokes" {
		os.Exit(runSpokes(os.Args[2:]))
	}
	os.Exit(runBench(os.Args[1:]))
}

// config is the benchmark's flags.
type config struct {
	sizes      []int
	apps       int
	rate       float64
	duration   time.Duration
	viewEvery  int
	perProcess int
	startRate  float64
	partitions int32
	ingest     int
	bootApps   int
	bin        string
	out        string
	kafka      string
	work       string
	keep       bool
	profile    time.Duration
	margin     time.Duration
	heartbeat  time.Duration
	label      string
	brokers    int   // the cluster's brokers, when this program starts it
	brokerPids []int // none: brokers this program did not start
	// racks are the brokers' racks when this program started more than
	// one: the trust topic is replicated to every broker, and the agents,
	// spread over the racks, read it from the replica in theirs.
	racks []string
}

func runBench(args []string) int {
	cfg := &config{}
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	sizes := fs.String("sizes", "100,1000,10000", "fleet sizes to run, comma-separated")
	fs.IntVar(&cfg.apps, "apps", 10, "Applications per cluster")
	fs.Float64Var(&cfg.rate, "rate", 100, "single-cluster changes per second in the fan-out phase")
	fs.DurationVar(&cfg.duration, "duration", time.Minute, "length of the fan-out phase")
	fs.IntVar(&cfg.viewEvery, "view-every", 10, "follow every n-th change until the projector's view shows it")
	fs.IntVar(&cfg.perProcess, "per-process", 2500, "simulated clusters per spoke-pack process")
	fs.Float64Var(&cfg.startRate, "start-rate", 50, "clusters started per second, over all packs, as a fleet comes up")
	partitions := fs.Int("partitions", 64, "partitions of the config and status topics")
	fs.IntVar(&cfg.ingest, "ingest", 300_000, "status deltas for the projector's ingestion phase")
	fs.IntVar(&cfg.bootApps, "boot-apps", 100, "Applications a new spoke bootstraps with")
	fs.StringVar(&cfg.bin, "bin", "bin", "directory of the argosy and argosy-hub binaries")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory of the results file and its plots")
	fs.StringVar(&cfg.kafka, "kafka", os.Getenv(kafkatest.EnvBootstrap), "running brokers' addresses, comma-separated; empty: start Apache Kafka "+kafkatest.Version+" (env KAFKA_BOOTSTRAP)")
	fs.IntVar(&cfg.brokers, "brokers", 0, "brokers of the Kafka cluster this program starts for each size; 0: as many as the size's connections need")
	fs.BoolVar(&cfg.keep, "keep", false, "keep each run's directory (logs, keys, views) under the temporary directory")
	fs.DurationVar(&cfg.heartbeat, "heartbeat", 30*time.Second, "the agents' heartbeat interval (their default: 30s)")
	fs.DurationVar(&cfg.margin, "clock-margin", 0, "the projector's and agents' --clock-margin; 0: their default")
	fs.StringVar(&cfg.label, "label", "", "added to the results file's name: DATE-LABEL.md")
	fs.DurationVar(&cfg.profile, "profile", 20*time.Second, "CPU profile of each process over this much of the fan-out phase; 0: none")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if cfg.bin, err = filepath.Abs(cfg.bin); err != nil {
		fmt.Fprintln(os.Stderr, "-bin:", err)
		return 2
	}
	cfg.partitions = int32(*partitions) //nolint:gosec // a flag of a small number
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "-sizes: %q is not a positive number\n", s)
			return 2
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		return 1
	}
	return 0
}

func bench(ctx context.Context, cfg *config) error {
	files := raiseFileLimit() // first: the brokers inherit it
	var err error
	if cfg.work, err = os.MkdirTemp("", "argosy-bench-fleet-*"); err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(cfg.work)
	}
	given := cfg.kafka
	progress("work in %s; %d open files allowed", cfg.work, files)
	rep := &report{cfg: cfg, started: time.Now()}
	perAgent := 4.0 // connections per agent, until a run measures it
	for i, n := range cfg.sizes {
		brokers, room := cfg.brokers, connRoom(files)
		switch {
		case given != "":
			brokers = len(seeds(given))
		case brokers == 0:
			brokers = brokersFor(n, room)
		}
		if need := int(float64(n) * perAgent); need > room*brokers {
			why := fmt.Sprintf("N = %d not run: about %d connections to %d brokers (%.1f per agent), "+
				"and this machine allows about %d to each (loopback source ports and open files, docs/bench.md)", n, need, brokers, perAgent, room)
			progress("%s", why)
			rep.skipped = append(rep.skipped, why)
			if err := rep.write(); err != nil {
				return err
			}
			continue
		}
		r, err := runOn(ctx, cfg, given, brokers, n, i == 0, rep)
		if err != nil {
			return fmt.Errorf("fleet of %d: %w", n, err)
		}
		rep.runs = append(rep.runs, r)
		perAgent = float64(r.conns) / float64(n)
		if err := rep.write(); err != nil { // after each size: a long run keeps what it measured
			return err
		}
	}
	progress("wrote %s", rep.path())
	return nil
}

// runOn runs fleet size n on the brokers given, or, when none are, on a
// Kafka cluster of its own of the given number of brokers, stopped after.
func runOn(ctx context.Context, cfg *config, given string, brokers, n int, wire bool, rep *report) (*run, error) {
	cfg.kafka, cfg.brokerPids, cfg.racks = given, nil, nil
	if given == "" {
		progress("N=%d: starting Apache Kafka %s, %d brokers", n, kafkatest.Version, brokers)
		sctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		c, err := kafkatest.StartCluster(sctx, brokers)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("start Apache Kafka: %w", err)
		}
		defer func() {
			if err := c.Close(context.WithoutCancel(ctx)); err != nil {
				progress("stop the brokers: %v", err)
			}
		}()
		cfg.kafka, cfg.brokerPids = c.Bootstrap(), c.Pids()
		for id := 1; brokers > 1 && id <= brokers; id++ {
			cfg.racks = append(cfg.racks, kafkatest.Rack(id))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(cfg.kafka)...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	r, err := runSize(ctx, cfg, kadm.NewClient(cl), n, wire, rep)
	if r != nil {
		r.brokers = brokers
	}
	return r, err
}

const (
	// ingestBatch is the deltas of one event in the second ingestion
	// phase: a spoke's window of changes to several Applications.
	ingestBatch = 5
	// settleIdle is how long after the first count of connections the
	// second is taken, the fleet idle in between.
	settleIdle = 60 * time.Second
	// liveAsked is how many live questions a run asks, one at a time.
	liveAsked = 100
)

// run is what one fleet size measured.
type run struct {
	n, procs int
	brokers  int   // of the Kafka cluster it ran on
	packMem  int64 // each spoke pack's GOMEMLIMIT; 0: none
	dropped  int64 // connection attempts full listen queues dropped while the fleet joined
	online   time.Duration
	rollout  time.Duration
	fan      *fanout
	ingest   float64
	boot     time.Duration
	idle     map[string]usage // after the rollout, before the changes
	conns    int              // TCP connections to the brokers then
	busiest  int              // of them, to the broker that had the most
	quiet    int              // TCP connections to the brokers settleIdle later
	// ingestBatched is the projector's ingestion, in deltas per second,
	// of deltas sent ingestBatch to an event.
	ingestBatched float64
	// ingestUsage is the projector's after its ingestion (it started
	// again for it, so its peak is of the ingestion alone).
	ingestUsage usage
	profiles    []string
	// live are the times of the live questions answered, sorted;
	// unanswered those that timed out.
	live       []time.Duration
	unanswered int
}

func runSize(ctx context.Context, cfg *config, adm *kadm.Client, n int, wire bool, rep *report) (*run, error) {
	r := &run{n: n}
	s, err := newSystem(ctx, cfg, adm, n)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := s.stop(context.WithoutCancel(ctx)); err != nil {
			slog.WarnContext(ctx, "stop", "err", err)
		}
	}()
	start, dropped := time.Now(), listenOverflows()
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	r.procs, r.packMem = len(s.packs), s.packLimit
	progress("N=%d: hub, projector and %d spoke processes started; joining", n, r.procs)
	clusters, err := s.waitOnline(ctx, 5*time.Minute+time.Duration(n)*50*time.Millisecond)
	if err != nil {
		return nil, err
	}
	r.online, r.dropped = time.Since(start), listenOverflows()-dropped
	progress("N=%d: %d clusters online after %s; rolling out %d Applications each", n, len(clusters), r.online.Round(time.Second), cfg.apps)
	a := &acks{at: map[string]time.Time{}}
	actx, stopAcks := context.WithCancel(ctx)
	defer stopAcks()
	go func() {
		if err := a.run(actx, cfg.kafka, s.topics[events.TopicStatus]); err != nil {
			slog.WarnContext(ctx, "acks", "err", err)
		}
	}()
	if r.rollout, err = s.rollout(ctx, a, clusters, cfg.apps); err != nil {
		return nil, err
	}
	progress("N=%d: rollout of %d Applications acknowledged in %s; settling", n, n*cfg.apps, r.rollout.Round(time.Second))
	time.Sleep(10 * time.Second)
	if r.idle, err = s.sample(); err != nil {
		return nil, err
	}
	if r.conns, r.busiest, err = brokerConns(cfg.kafka); err != nil {
		return nil, err
	}
	// franz-go closes a connection idle for ConnIdleTimeout (20 s) when
	// its reaper, every 20 s, finds it so: the join's seed connections
	// are gone a minute later.
	time.Sleep(settleIdle)
	if r.quiet, _, err = brokerConns(cfg.kafka); err != nil {
		return nil, err
	}
	progress("N=%d: %v changes/s for %s", n, cfg.rate, cfg.duration)
	var profiled chan []string
	if cfg.profile > 0 {
		profiled = make(chan []string, 1)
		go func() { profiled <- s.profile(ctx, cfg.profile, filepath.Join(cfg.work, "profiles"), n) }()
	}
	if r.fan, err = s.fanOut(ctx, a, clusters, cfg.apps, cfg.rate, cfg.duration, cfg.viewEvery); err != nil {
		return nil, err
	}
	if profiled != nil {
		r.profiles = <-profiled
	}
	progress("N=%d: %d changes, ack p50 %s p99 %s; %d live questions", n, r.fan.changes, pct(r.fan.ack, 50), pct(r.fan.ack, 99), liveAsked)
	if r.live, r.unanswered, err = s.liveQuestions(ctx, clusters, cfg.apps, liveAsked); err != nil {
		return nil, err
	}
	progress("N=%d: live questions answered p50 %s p99 %s; bootstrap of a spoke with %d Applications", n,
		pct(r.live, 50), pct(r.live, 99), cfg.bootApps)
	if r.boot, err = s.bootstrap(ctx, cfg.bootApps); err != nil {
		return nil, err
	}
	if wire {
		progress("N=%d: bytes per status change with each codec", n)
		if rep.wire, rep.sample, err = measureWire(ctx, cfg.kafka, adm, s.prefix, s.topics[events.TopicStatus], 2000); err != nil {
			return nil, err
		}
	}
	progress("N=%d: projector ingestion of %d status deltas, alone", n, cfg.ingest)
	if r.ingest, err = s.ingest(ctx, clusters, cfg.ingest, 1); err != nil {
		return nil, err
	}
	if r.ingestUsage, err = readUsage(s.projProc.Pid()); err != nil {
		return nil, err
	}
	progress("N=%d: %.0f events/s folded; now %d deltas, %d to an event", n, r.ingest, cfg.ingest, ingestBatch)
	perSec, err := s.ingest(ctx, clusters, cfg.ingest, ingestBatch)
	if err != nil {
		return nil, err
	}
	r.ingestBatched = perSec * ingestBatch
	progress("N=%d: %.0f deltas/s folded in batches", n, r.ingestBatched)
	return r, nil
}

// raiseFileLimit raises this process's limit of open files, which the
// broker and the spoke packs it starts inherit (every agent holds several
// connections), as far as it may, and returns the limit.
func raiseFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	for _, want := range []uint64{1 << 20, l.Max} {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: max(want, l.Max)}); err == nil {
			return want
		}
	}
	return l.Cur
}

// connRoom is about how many connections to one broker port this machine
// allows: loopback's ephemeral source ports, and the open files the
// broker may hold, less some for the broker's own files.
func connRoom(files uint64) int {
	room := int(files) - 2000 //nolint:gosec // a small limit
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil {
			room = min(room, hi-lo+1)
		}
	}
	return room
}

// brokersFor is how many brokers a fleet of n clusters needs when each
// broker may hold room connections. On one broker an agent holds about
// four connections (perAgent). On several it holds more, since franz-go
// keeps produce, fetch and request connections to each broker it talks
// to: 7.3 at N = 1,000 on three (perAgentSpread). The trust topic, which
// every agent reads, is then replicated to every broker and read from the
// agent's rack, so no broker takes a connection from every agent, and
// the connections spread over the brokers; one broker more is kept for
// what does not spread evenly.
func brokersFor(n, room int) int {
	const perAgent, perAgentSpread = 4, 7
	if n*perAgent <= room {
		return 1
	}
	return (n*perAgentSpread+room-1)/room + 1
}

// listenOverflows is the machine's count of connection attempts dropped
// because a listening socket's queue was full (TcpExt ListenOverflows in
// /proc/net/netstat); 0 if it cannot be read.
func listenOverflows() int64 {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return 0
	}
	return netstatValue(string(b), "TcpExt:", "ListenOverflows")
}

// netstatValue is the value named name in the section of /proc/net/netstat
// text b: a line of names, then a line of values, each line starting with
// section. 0 if there is none.
func netstatValue(b, section, name string) int64 {
	var names []string
	for line := range strings.Lines(b) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != section {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, name); i > 0 && i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			return n
		}
	}
	return 0
}

// seeds splits a comma-separated list of broker addresses.
func seeds(brokers string) []string { return strings.Split(brokers, ",") }

func randN(n int) int { return rand.IntN(n) } //nolint:gosec // picks which cluster changes, not a secret

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
