package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// system is one fleet under test: topics of its own on the broker, a hub
// process, a projector process and the spoke packs.
type system struct {
	cfg      *config
	n        int
	dir      string
	prefix   string
	topics   events.Topics
	adm      *kadm.Client
	token    string
	hubURL   string
	viewURL  string
	hub      *api.Client
	views    *api.Client
	hubProc  *testproc.Proc
	projProc *testproc.Proc
	projArgs []string
	packs    []*pack
	// packLimit is each spoke pack's GOMEMLIMIT, in bytes; 0: none.
	packLimit int64
	// metrics are the hub's and the projector's metrics addresses, which
	// serve Go's profiles too.
	hubMetrics, projMetrics string
}

// pack is one process of simulated spokes.
type pack struct {
	proc     *testproc.Proc
	prefix   string
	clusters int
	pprof    string
}

func newSystem(ctx context.Context, cfg *config, adm *kadm.Client, n int) (*system, error) {
	dir, err := os.MkdirTemp(cfg.work, fmt.Sprintf("n%d-*", n))
	if err != nil {
		return nil, err
	}
	s := &system{cfg: cfg, n: n, dir: dir, adm: adm, prefix: "bench-" + filepath.Base(dir) + "-"}
	s.topics = events.DefaultTopics(s.prefix)
	plan := events.TopicPlan(cfg.partitions, cfg.partitions)
	if len(cfg.racks) > 1 {
		// Every agent reads the trust topic: one replica on each broker
		// lets each read from its rack's.
		trust := map[events.Topic]events.TopicSpec{events.TopicTrust: plan[events.TopicTrust]}
		if err := events.EnsureTopics(ctx, adm, s.topics, trust, int16(len(cfg.racks)), 1); err != nil { //nolint:gosec // a handful of brokers
			return nil, err
		}
		delete(plan, events.TopicTrust)
	}
	if err := events.EnsureTopics(ctx, adm, s.topics, plan, 1, 1); err != nil {
		return nil, err
	}
	hubBin := filepath.Join(cfg.bin, "argosy-hub")
	if out, err := exec.CommandContext(ctx, hubBin, "keygen", "--dir", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("keygen: %w\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, hubBin, "token", "new", "bench", "--role", "admin", "--file", filepath.Join(dir, "tokens.yaml")).Output()
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	s.token = strings.TrimSpace(string(out))
	return s, nil
}

// start runs the hub, the projector and the spoke packs, and waits until
// every cluster has joined and its agent reports.
func (s *system) start(ctx context.Context) error {
	ports, err := testproc.FreePorts(4)
	if err != nil {
		return err
	}
	pprofEnv := []string{telemetry.EnvPprof + "=true"}
	s.hubURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.hubMetrics, s.projMetrics = fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[3])
	if s.hubProc, err = testproc.Start(s.dir, "hub", filepath.Join(s.cfg.bin, "argosy-hub"), []string{"run",
		"--kafka-brokers", s.cfg.kafka, "--topic-prefix", s.prefix, "--hub-key", filepath.Join(s.dir, "hub.key"),
		"--tokens", filepath.Join(s.dir, "tokens.yaml"), "--audit-reads=false",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", s.hubMetrics}, pprofEnv); err != nil {
		return err
	}
	s.viewURL = fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	s.projArgs = []string{"projector", "--kafka-brokers", s.cfg.kafka, "--topic-prefix", s.prefix,
		"--hub-key", filepath.Join(s.dir, "hub.pub"), "--store", "sqlite://" + filepath.Join(s.dir, "views.db"), "--group", s.prefix + "projector",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--tokens", filepath.Join(s.dir, "tokens.yaml"), "--metrics-address", s.projMetrics}
	if s.cfg.margin > 0 {
		s.projArgs = append(s.projArgs, "--clock-margin", s.cfg.margin.String())
	}
	if err := s.startProjector(ctx); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.hubURL+"/readyz", s.hubProc); err != nil {
		return err
	}
	if s.hub, err = api.NewClient(s.hubURL, s.token, nil); err != nil {
		return err
	}
	if s.views, err = api.NewClient(s.viewURL, s.token, nil); err != nil {
		return err
	}
	packs := (s.n + s.cfg.perProcess - 1) / s.cfg.perProcess
	s.packLimit = packMemLimit(packs)
	for i := range packs {
		n := min(s.cfg.perProcess, s.n-i*s.cfg.perProcess)
		// Each pack starts its share of the fleet's start rate.
		ramp := time.Duration(float64(n) / (s.cfg.startRate / float64(packs)) * float64(time.Second))
		if err := s.startPack(i, n, ramp); err != nil {
			return err
		}
	}
	return nil
}

func (s *system) startProjector(ctx context.Context) error {
	var err error
	if s.projProc, err = testproc.Start(s.dir, "projector", filepath.Join(s.cfg.bin, "argosy"), s.projArgs,
		[]string{telemetry.EnvPprof + "=true"}); err != nil {
		return err
	}
	return waitHTTP(ctx, s.viewURL+"/api/v1/clusters", s.projProc)
}

func (s *system) startPack(i, n int, ramp time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ports, err := testproc.FreePorts(1)
	if err != nil {
		return err
	}
	p := &pack{prefix: fmt.Sprintf("p%d", i), clusters: n, pprof: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	p.proc, err = testproc.Start(s.dir, "spokes-"+p.prefix, self, []string{"spokes", "-hub", s.hubURL, "-hub-key", filepath.Join(s.dir, "hub.pub"),
		"-kafka", s.cfg.kafka, "-topic-prefix", s.prefix, "-prefix", p.prefix, "-clusters", strconv.Itoa(n),
		"-dir", filepath.Join(s.dir, "spokes"), "-pprof", p.pprof, "-ramp", ramp.String(), "-clock-margin", s.cfg.margin.String(),
		"-heartbeat", s.cfg.heartbeat.String(), "-racks", strings.Join(s.cfg.racks, ",")}, s.packEnv())
	if err != nil {
		return err
	}
	s.packs = append(s.packs, p)
	return nil
}

// packEnv is a spoke pack's environment: the hub's token, and its memory
// limit.
func (s *system) packEnv() []string {
	env := []string{envToken + "=" + s.token}
	if s.packLimit > 0 {
		env = append(env, fmt.Sprintf("GOMEMLIMIT=%d", s.packLimit))
	}
	return env
}

// packReserve is the memory kept, when the spoke packs start, for what
// the hub, the projector and the brokers take after: the peaks of the
// rollout and of the projector's ingestion.
const packReserve = 3 << 30

// packMemLimit is each of n spoke packs' share of the memory available
// when they start, less packReserve, as Go's soft memory limit
// (GOMEMLIMIT): a pack's collector then works harder as the pack nears its
// share instead of letting its heap double between collections, which is
// what a fleet of thousands of agents in a few processes needs to fit
// the machine. 0 when /proc/meminfo cannot be read or nothing is left.
func packMemLimit(n int) int64 {
	return max(0, (meminfo("MemAvailable")-packReserve)/int64(n))
}

// meminfo is the value of name in /proc/meminfo, in bytes; 0 if it cannot
// be read.
func meminfo(name string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		var kb int64
		if _, err := fmt.Sscanf(line, name+": %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

// procs returns every process of the system by role.
func (s *system) procs() map[string][]*testproc.Proc {
	m := map[string][]*testproc.Proc{"hub": {s.hubProc}, "projector": {s.projProc}}
	for _, p := range s.packs {
		m["spokes"] = append(m["spokes"], p.proc)
	}
	return m
}

// stop ends every process, the spoke packs first, and deletes the topics.
func (s *system) stop(ctx context.Context) error {
	var errs []error
	for _, p := range s.packs {
		errs = append(errs, p.proc.Stop(30*time.Second))
	}
	for _, p := range []*testproc.Proc{s.projProc, s.hubProc} {
		if p != nil {
			errs = append(errs, p.Stop(30*time.Second))
		}
	}
	var names []string
	for _, t := range s.topics {
		names = append(names, t)
	}
	if _, err := s.adm.DeleteTopics(ctx, names...); err != nil {
		errs = append(errs, err)
	}
	if !s.cfg.keep {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

func waitHTTP(ctx context.Context, url string, p *testproc.Proc) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return p.WaitFor(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// usage is a process's CPU time and memory, read from /proc.
type usage struct {
	cpu       time.Duration // user and system time so far
	rss, peak int64         // bytes: now, and the most ever (VmHWM)
}

// clockTick is the kernel's USER_HZ, which /proc/PID/stat counts in: 100
// on every Linux architecture Go supports.
const clockTick = 100

func readUsage(pid int) (usage, error) {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of stat
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return u, err
		}
		ticks += v
	}
	u.cpu = time.Duration(ticks) * time.Second / clockTick
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return u, err
		}
		if k == "VmRSS" {
			u.rss = kb << 10
		} else {
			u.peak = kb << 10
		}
	}
	return u, sc.Err()
}

// sample reads the usage of every process of the system, by role, of the
// broker if this program started it, and of the whole machine ("machine":
// CPU time busy on all cores, from /proc/stat).
func (s *system) sample() (map[string]usage, error) {
	out := map[string]usage{}
	for _, pid := range s.cfg.brokerPids {
		u, err := readUsage(pid)
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", pid, err)
		}
		b := out["broker"]
		b.cpu, b.rss, b.peak = b.cpu+u.cpu, b.rss+u.rss, b.peak+u.peak
		out["broker"] = b
	}
	busy, err := machineBusy()
	if err != nil {
		return nil, err
	}
	out["machine"] = usage{cpu: busy}
	for role, ps := range s.procs() {
		var sum usage
		for _, p := range ps {
			u, err := readUsage(p.Pid())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			sum.cpu, sum.rss, sum.peak = sum.cpu+u.cpu, sum.rss+u.rss, sum.peak+u.peak
		}
		out[role] = sum
	}
	return out, nil
}

// profile takes a CPU profile of the hub, the projector and the first
// spoke pack over d, concurrently, and returns for each the top of
// `go tool pprof -top`, the profiles kept in dir.
func (s *system) profile(ctx context.Context, d time.Duration, dir string, n int) []string {
	self, err := os.Executable()
	if err != nil {
		return []string{err.Error()}
	}
	targets := []struct{ name, addr, bin string }{
		{"hub", s.hubMetrics, filepath.Join(s.cfg.bin, "argosy-hub")},
		{"projector", s.projMetrics, filepath.Join(s.cfg.bin, "argosy")},
		{"spokes", s.packs[0].pprof, self},
	}
	out := make([]string, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			out[i] = t.name + ": " + profileOne(ctx, d, dir, fmt.Sprintf("n%d-%s.pprof", n, t.name), t.addr, t.bin)
		})
	}
	wg.Wait()
	return out
}

func profileOne(ctx context.Context, d time.Duration, dir, file, addr, bin string) string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	path := filepath.Join(dir, file)
	f, err := os.Create(path)
	if err != nil {
		return err.Error()
	}
	_, err = io.Copy(f, resp.Body)
	if err := errors.Join(err, f.Close()); err != nil {
		return err.Error()
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=15", bin, path).Output()
	if err != nil {
		return err.Error()
	}
	// Where in Argosy's own code the time goes, below it.
	cum, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=15", "-focus=github.com/argosyproj", "-show=github.com/argosyproj", bin, path).Output()
	if err != nil {
		return err.Error()
	}
	return string(top) + "\nArgosy's functions by cumulative time:\n" + string(cum)
}

// brokerConns counts the established TCP connections to the brokers'
// ports on this machine, from /proc/net/tcp: the client ends, whose remote
// port is a broker's. It returns them all and those of the broker that
// has the most.
func brokerConns(brokers string) (total, busiest int, err error) {
	ports := map[string]int{}
	for _, addr := range seeds(brokers) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return 0, 0, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return 0, 0, err
		}
		ports[fmt.Sprintf("%04X", p)] = 0
	}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st …; 01 is ESTABLISHED.
			if len(f) <= 3 || f[3] != "01" {
				continue
			}
			_, port, _ := strings.Cut(f[2], ":")
			if n, ok := ports[port]; ok {
				ports[port] = n + 1
			}
		}
	}
	for _, n := range ports {
		total, busiest = total+n, max(busiest, n)
	}
	return total, busiest, nil
}

// machineBusy is the CPU time all cores have spent busy since boot: every
// column of /proc/stat's cpu line but idle and iowait (guest time is
// counted within user already).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var ticks int64
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}
