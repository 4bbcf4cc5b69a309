// Package sim is the simulated fleet: a simulated Argo CD (Cluster) and a
// fleet driver (Fleet) that runs N real spoke.Agents, each on a simulated
// Argo CD, each joined to the hub through the real
// join flow (registration with a join token, then the join call with the
// cluster's new keys). argosy dev runs one; the fleet benchmark runs
// bigger ones. Clusters go offline now and then and come back, as real
// ones do.
package sim

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/spoke"
)

// FleetConfig is a fleet's make-up.
type FleetConfig struct {
	// Clusters is how many clusters; they are named Prefix-000, -001, …
	Clusters int
	Prefix   string
	// Hub is a client of the hub with an admin token: it registers the
	// clusters. HubKey is the hub's public key, which the agents trust.
	Hub    *api.Client
	HubKey ed25519.PublicKey
	// Conn connects the agents to Kafka, after the fleet's own bound on
	// what one fetch brings back (AgentFetchBytes), which Conn may
	// override; Topics are Argosy's topics, and
	// TopicPrefix the prefix they were named with, which begins the
	// groups an older agent committed to (events.SpokeGroup), which an
	// agent reads once when its state holds no config offset.
	Conn []kgo.Opt
	// Racks spread the agents over racks: the i-th agent reads from the
	// replicas in Racks[i % len(Racks)] (kgo.Rack). Empty: from leaders.
	Racks       []string
	Topics      events.Topics
	TopicPrefix string
	// Dir keeps each cluster's keys and, when the fleet stops, its
	// simulated Argo CD and agent state, so that the next run carries on.
	// Empty: nothing is kept.
	Dir string
	// Behaviour of each simulated Argo CD (default DefaultBehaviour).
	Behaviour *Behaviour
	// Offline is how often, on average, some cluster goes offline (its
	// agent stops) for OfflineFor; zero: never.
	Offline    time.Duration
	OfflineFor [2]time.Duration
	// Heartbeat is the agents' heartbeat interval (default 5 s).
	Heartbeat time.Duration
	// Ramp spreads the agents' first starts evenly over this long, as a
	// fleet's clusters come up over time, not in one instant; zero: all
	// at once.
	Ramp time.Duration
	// AgentOpts are added to every agent's options.
	AgentOpts []spoke.Option
	Log       *slog.Logger
}

// AgentFetchBytes bounds what one fetch of a simulated agent brings back.
// Each agent holds, until it has handled them, the records of its last
// fetch and the buffers they were read and decompressed into; franz-go's
// defaults (50 MiB a fetch, 1 MiB a partition) suit one agent in its own
// process, not thousands in one, where a bootstrap's fetches made those
// buffers most of the heap. argosy dev's in-process broker also keeps,
// for each connection, a buffer as big as the largest answer it wrote on
// it. An agent's topics are read in a few more fetches instead.
const AgentFetchBytes = 64 << 10

// Labels returns the labels of the i-th cluster: env, region and tier,
// spread so that every combination appears in a fleet of 27 or more.
func Labels(i int) map[string]string {
	envs, regions, tiers := []string{"dev", "staging", "prod"}, []string{"eu", "us", "ap"}, []string{"frontend", "backend", "data"}
	return map[string]string{"env": envs[i%3], "region": regions[(i/3)%3], "tier": tiers[(i/9)%3]}
}

// Name is the name of the i-th cluster of a fleet with prefix.
func Name(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// Fleet is a running simulated fleet.
type Fleet struct {
	cfg     FleetConfig
	members []*member
}

// member is one simulated cluster.
type member struct {
	name   string
	conn   []kgo.Opt // the fleet's Conn, and the member's rack
	argo   *Cluster
	store  *Store
	keys   spoke.Keys
	mu     sync.Mutex
	online bool
}

// New checks cfg and loads what an earlier run of the fleet kept.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	var errs []error
	if cfg.Clusters <= 0 {
		errs = append(errs, errors.New("at least one cluster"))
	}
	if cfg.Hub == nil || len(cfg.HubKey) != ed25519.PublicKeySize || len(cfg.Conn) == 0 {
		errs = append(errs, errors.New("a hub client, the hub's key and Kafka connection options are required"))
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "sim"
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	b := DefaultBehaviour
	if cfg.Behaviour != nil {
		b = *cfg.Behaviour
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	cfg.Conn = slices.Concat([]kgo.Opt{kgo.FetchMaxBytes(AgentFetchBytes), kgo.FetchMaxPartitionBytes(AgentFetchBytes)}, cfg.Conn)
	f := &Fleet{cfg: cfg}
	for i := range cfg.Clusters {
		m := &member{name: Name(cfg.Prefix, i), conn: cfg.Conn, argo: NewCluster(WithBehaviour(b)), store: NewStore()}
		if len(cfg.Racks) > 0 {
			m.conn = slices.Concat(cfg.Conn, []kgo.Opt{kgo.Rack(cfg.Racks[i%len(cfg.Racks)])})
		}
		if err := f.load(m); err != nil {
			return nil, err
		}
		f.members = append(f.members, m)
	}
	return f, nil
}

// Names returns the fleet's cluster names.
func (f *Fleet) Names() []string {
	out := make([]string, len(f.members))
	for i, m := range f.members {
		out[i] = m.name
	}
	return out
}

// Online returns how many agents run now.
func (f *Fleet) Online() int {
	n := 0
	for _, m := range f.members {
		m.mu.Lock()
		if m.online {
			n++
		}
		m.mu.Unlock()
	}
	return n
}

// Cluster returns the simulated Argo CD of a cluster of the fleet.
func (f *Fleet) Cluster(name string) (*Cluster, bool) {
	for _, m := range f.members {
		if m.name == name {
			return m.argo, true
		}
	}
	return nil, false
}

// Join registers every cluster the hub does not have yet, with its labels,
// and joins it with the join token the hub answers. A cluster that has
// keys from an earlier run is registered already; it keeps them.
func (f *Fleet) Join(ctx context.Context) error {
	objs, err := f.cfg.Hub.Objects(ctx, "", api.KindClusters)
	if err != nil {
		return fmt.Errorf("fleet: list clusters: %w", err)
	}
	registered := map[string]bool{}
	for _, o := range objs {
		registered[o.Name] = !o.Deleted
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, m := range f.members {
		if registered[m.name] && m.keys.Signing != nil {
			continue
		}
		g.Go(func() error { return f.join(gctx, m, Labels(i)) })
	}
	return g.Wait()
}

func (f *Fleet) join(ctx context.Context, m *member, labels map[string]string) error {
	res, err := f.cfg.Hub.RegisterCluster(ctx, m.name, api.ClusterRequest{Labels: labels}, api.WriteOptions{})
	if err != nil {
		return fmt.Errorf("fleet: register %s: %w", m.name, err)
	}
	keys, err := spoke.GenerateKeys()
	if err != nil {
		return err
	}
	pub := keys.Public(m.name)
	if _, err := f.cfg.Hub.Join(ctx, m.name, api.JoinRequest{Token: res.JoinToken, SigningKey: pub[0].PublicKey, SealingKey: pub[1].PublicKey}); err != nil &&
		api.StatusOf(err) != http.StatusConflict {
		return fmt.Errorf("fleet: join %s: %w", m.name, err)
	}
	m.keys = keys
	if f.cfg.Dir != "" {
		if err := spoke.WriteKeys(filepath.Join(f.cfg.Dir, m.name), m.name, keys); err != nil {
			return fmt.Errorf("fleet: keys of %s: %w", m.name, err)
		}
	}
	return nil
}

// Run joins the fleet (see Join) and runs every agent until ctx ends; then
// it keeps each cluster's state in Dir and returns nil. An agent that
// stops with an error is started again after a back-off, as Kubernetes
// restarts a spoke's pod; Run returns an error only for an agent that
// cannot be made at all.
func (f *Fleet) Run(ctx context.Context) error {
	if err := f.Join(ctx); err != nil {
		return err
	}
	defer f.save()
	g, gctx := errgroup.WithContext(ctx)
	down := make([]chan time.Duration, len(f.members))
	for i, m := range f.members {
		down[i] = make(chan time.Duration, 1)
		g.Go(func() error {
			select {
			case <-gctx.Done():
				return nil
			case <-time.After(f.cfg.Ramp * time.Duration(i) / time.Duration(len(f.members))):
			}
			return f.runMember(gctx, m, down[i])
		})
	}
	if f.cfg.Offline > 0 {
		g.Go(func() error { return f.sendOffline(gctx, down) })
	}
	return g.Wait()
}

// runMember runs a cluster's agent, stopping it for as long as it is told
// to go offline, until ctx ends. An agent that fails is started again
// after a back-off that doubles from a second to restartMax, and starts
// over once an agent ran for restartMax.
func (f *Fleet) runMember(ctx context.Context, m *member, down <-chan time.Duration) error {
	backoff := time.Second
	for ctx.Err() == nil {
		a, err := spoke.New(m.name, m.keys, f.cfg.HubKey, m.conn, m.argo, m.argo, m.store,
			append([]spoke.Option{spoke.WithTopics(f.cfg.Topics), spoke.WithGroup(events.SpokeGroup(f.cfg.TopicPrefix, m.name)),
				spoke.WithHeartbeatInterval(f.cfg.Heartbeat),
				spoke.WithLogger(f.cfg.Log.With("cluster", m.name)), spoke.WithAgentVersion("sim"), spoke.WithArgoCDVersion("v2.14.21-sim"),
				spoke.WithInspector(m.argo)},
				f.cfg.AgentOpts...)...)
		if err != nil {
			return err
		}
		actx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		m.setOnline(true)
		started := time.Now()
		go func() { done <- a.Run(actx) }()
		var away time.Duration
		select {
		case err = <-done:
		case away = <-down:
			stop()
			err = <-done
		}
		stop()
		m.setOnline(false)
		if time.Since(started) >= restartMax {
			backoff = time.Second
		}
		if err != nil && ctx.Err() == nil {
			f.cfg.Log.WarnContext(ctx, "agent failed; starting it again", "cluster", m.name, "in", backoff, "err", err)
			away, backoff = backoff, min(2*backoff, restartMax)
		} else if away > 0 {
			f.cfg.Log.InfoContext(ctx, "cluster offline", "cluster", m.name, "for", away)
		}
		if away > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(away):
				f.cfg.Log.InfoContext(ctx, "cluster back online", "cluster", m.name)
			}
		}
	}
	return nil
}

// restartMax is the longest back-off before a failed agent starts again
// (Kubernetes' own grows to five minutes; a simulation need not wait so
// long).
const restartMax = 30 * time.Second

// sendOffline sends a random cluster offline every Offline on average.
func (f *Fleet) sendOffline(ctx context.Context, down []chan time.Duration) error {
	for {
		wait := time.Duration(rand.Int64N(int64(2*f.cfg.Offline)) + 1) //nolint:gosec // a simulation
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		lo, hi := f.cfg.OfflineFor[0], f.cfg.OfflineFor[1]
		away := lo
		if hi > lo {
			away += time.Duration(rand.Int64N(int64(hi - lo))) //nolint:gosec // a simulation
		}
		select {
		case down[rand.IntN(len(down))] <- max(away, time.Second): //nolint:gosec // a simulation
		default: // that cluster is offline already
		}
	}
}

func (m *member) setOnline(v bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.online = v
}

// state is what a cluster keeps in Dir between runs.
type state struct {
	Argo  *Cluster `json:"argo"`
	Store *Store   `json:"store"`
}

const stateFile = "state.json"

// load reads the keys and state an earlier run kept, if any.
func (f *Fleet) load(m *member) error {
	if f.cfg.Dir == "" {
		return nil
	}
	dir := filepath.Join(f.cfg.Dir, m.name)
	keys, err := spoke.LoadKeys(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("fleet: keys of %s: %w", m.name, err)
	}
	m.keys = keys
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &state{Argo: m.argo, Store: m.store}); err != nil {
		return fmt.Errorf("fleet: state of %s: %w", m.name, err)
	}
	return nil
}

// save keeps every cluster's state in Dir; a failure is logged.
func (f *Fleet) save() {
	if f.cfg.Dir == "" {
		return
	}
	for _, m := range f.members {
		if m.keys.Signing == nil {
			continue
		}
		b, err := json.Marshal(state{Argo: m.argo, Store: m.store})
		if err == nil {
			path := filepath.Join(f.cfg.Dir, m.name, stateFile)
			if err = os.WriteFile(path+".tmp", b, 0o600); err == nil {
				err = os.Rename(path+".tmp", path)
			}
		}
		if err != nil {
			f.cfg.Log.Error("cluster state not kept; it starts over next time", "cluster", m.name, "err", err)
		}
	}
}
