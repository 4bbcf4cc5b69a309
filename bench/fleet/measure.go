package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
)

// manifest is the i-th Application of the benchmark at revision rev, a
// full commit id, which the simulated Argo CD deploys as it is.
func manifest(i int, rev string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application",
"metadata":{"name":"app-%02d","namespace":"argocd"},
"spec":{"project":"default","source":{"repoURL":"https://git.example.com/fleet.git","path":"apps/app-%02d","targetRevision":%q},
"destination":{"server":"https://kubernetes.default.svc","namespace":"app-%02d"},"syncPolicy":{"automated":{"prune":true}}}}`, i, i, rev, i))
}

func newRevision() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

// acks follows the status topic and keeps, for every config event a
// spoke acknowledged as applied, when the broker appended the ack
// (the status topic's timestamps are the broker's LogAppendTime).
type acks struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *acks) run(ctx context.Context, brokers, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(brokers)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if header(r, "ce_type") != events.TypeConfigApplied {
				return
			}
			var d struct {
				EventID string `json:"eventId"`
			}
			if json.Unmarshal(r.Value, &d) != nil {
				return
			}
			a.mu.Lock()
			if _, seen := a.at[d.EventID]; !seen {
				a.at[d.EventID] = r.Timestamp
			}
			a.mu.Unlock()
		})
	}
	return nil
}

func header(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}

// wait waits until every one of ids is acknowledged, or timeout; it
// returns how many are not.
func (a *acks) wait(ctx context.Context, ids []string, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		a.mu.Lock()
		missing := 0
		for _, id := range ids {
			if _, ok := a.at[id]; !ok {
				missing++
			}
		}
		a.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return missing
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (a *acks) when(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id]
	return t, ok
}

// rollout applies each of the benchmark's Applications to every cluster,
// one request per Application, and waits until every cluster applied them.
func (s *system) rollout(ctx context.Context, a *acks, clusters []string, apps int) (time.Duration, error) {
	start := time.Now()
	var ids []string
	for i := range apps {
		res, err := s.hub.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: clusters, Manifest: manifest(i, newRevision())}, api.WriteOptions{})
		if err != nil {
			return 0, fmt.Errorf("apply app-%02d: %w", i, err)
		}
		for _, e := range res.Events {
			ids = append(ids, e.ID)
		}
	}
	if missing := a.wait(ctx, ids, 10*time.Minute+time.Duration(len(ids))*10*time.Millisecond); missing > 0 {
		return 0, fmt.Errorf("rollout: %d of %d applies never acknowledged", missing, len(ids))
	}
	return time.Since(start), nil
}

// fanout is the result of the change-rate phase.
type fanout struct {
	changes, failed, lost int
	viewMissed            int // followed changes the view did not show within 2 min
	ack, view             []time.Duration
	achieved              float64 // changes answered per second
	elapsed               time.Duration
	before, after         map[string]usage
}

// fanOut makes rate single-cluster changes a second for d, open loop, each
// to a random Application on a random cluster, and measures from each
// answer to the spoke's acknowledgement and, for every viewEvery-th
// change, to the projector's view showing it applied.
func (s *system) fanOut(ctx context.Context, a *acks, clusters []string, apps int, rate float64, d time.Duration, viewEvery int) (*fanout, error) {
	r := &fanRun{s: s, viewEvery: viewEvery}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(512)
	r.views.SetLimit(256)
	before, err := s.sample()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	n := 0
loop:
	for {
		select {
		case <-gctx.Done():
			break loop
		case now := <-tick.C:
			if now.Sub(start) >= d {
				break loop
			}
		}
		n++
		cluster, app, k := clusters[randN(len(clusters))], randN(apps), n
		g.Go(func() error {
			r.change(ctx, gctx, cluster, app, k)
			return nil
		})
	}
	tick.Stop()
	if err := g.Wait(); err != nil {
		return nil, err
	}
	answered := time.Since(start)
	if err := r.views.Wait(); err != nil {
		return nil, err
	}
	ids := make([]string, len(r.done))
	for i, c := range r.done {
		ids[i] = c.id
	}
	a.wait(ctx, ids, time.Minute)
	after, err := s.sample()
	if err != nil {
		return nil, err
	}
	f := &fanout{changes: n, failed: r.failed, viewMissed: r.viewMissed, achieved: float64(len(r.done)) / answered.Seconds(),
		elapsed: time.Since(start), before: before, after: after}
	r.latencies(f, a)
	return f, nil
}

// fanChange is one answered change of the change-rate phase.
type fanChange struct {
	id      string
	answer  time.Time
	viewLat time.Duration
}

// fanRun is what the change-rate phase's changes record as they are
// answered; views follows the changes whose view is measured, and fanOut
// waits for it.
type fanRun struct {
	s         *system
	viewEvery int
	views     errgroup.Group

	mu         sync.Mutex
	done       []fanChange
	failed     int
	viewMissed int
}

// change makes the k-th change, to Application app on cluster, with gctx,
// and records it; every viewEvery-th is followed, with ctx, until the
// view shows it.
func (r *fanRun) change(ctx, gctx context.Context, cluster string, app, k int) {
	res, err := r.s.hub.Apply(gctx, api.KindApplications, api.ApplyRequest{Clusters: []string{cluster}, Manifest: manifest(app, newRevision())}, api.WriteOptions{})
	answer := time.Now()
	if err != nil || len(res.Events) != 1 {
		slog.WarnContext(gctx, "change failed", "cluster", cluster, "err", err)
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		return
	}
	c := fanChange{id: res.Events[0].ID, answer: answer}
	if k%r.viewEvery != 0 {
		r.record(c)
		return
	}
	gen := res.Events[0].Generation
	r.views.Go(func() error {
		lat, err := r.s.waitView(ctx, cluster, fmt.Sprintf("app-%02d", app), gen, answer)
		if err != nil {
			r.mu.Lock()
			r.viewMissed++
			r.mu.Unlock()
			slog.WarnContext(ctx, "view never showed a change", "cluster", cluster, "err", err)
		}
		c.viewLat = lat
		r.record(c)
		return nil
	})
}

func (r *fanRun) record(c fanChange) {
	r.mu.Lock()
	r.done = append(r.done, c)
	r.mu.Unlock()
}

// latencies puts in f, sorted, the acknowledgement latency of each
// recorded change a acknowledged (counting the others lost) and the view
// latencies measured.
func (r *fanRun) latencies(f *fanout, a *acks) {
	for _, c := range r.done {
		at, ok := a.when(c.id)
		if !ok {
			f.lost++
			continue
		}
		f.ack = append(f.ack, at.Sub(c.answer))
		if c.viewLat > 0 {
			f.view = append(f.view, c.viewLat)
		}
	}
	slices.Sort(f.ack)
	slices.Sort(f.view)
}

// waitView polls the projector's view of one Application until it shows
// generation gen applied, and returns how long after answer that was. It
// polls every 10 ms, or every twentieth of the time since the answer when
// that is longer: the error is within 10 ms or 5 %, and the followers,
// dozens at a time when the view lags by seconds, do not load the
// projector they measure (at every 10 ms they took most of its CPU).
func (s *system) waitView(ctx context.Context, cluster, app string, gen int64, answer time.Time) (time.Duration, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		rows, err := s.views.Apps(ctx, projector.AppFilter{Cluster: cluster, Name: app})
		if err != nil {
			return 0, err
		}
		if len(rows) == 1 && rows[0].Observed != nil && rows[0].Observed.AppliedGeneration >= gen {
			return time.Since(answer), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(max(10*time.Millisecond, time.Since(answer)/20)):
		}
	}
	return 0, errors.New("timed out")
}

// waitOnline waits until the projector shows every cluster connected.
func (s *system) waitOnline(ctx context.Context, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		cs, err := s.views.Clusters(ctx)
		if err == nil {
			var names []string
			for _, c := range cs {
				if c.Connected {
					names = append(names, c.Name)
				}
			}
			if len(names) >= s.n {
				slices.Sort(names)
				return names, nil
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%d of %d clusters connected after %s", len(names), s.n, timeout)
			}
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// bootstrap registers a new cluster, places apps Applications on it, and
// a little later starts its agent: it returns how long from the agent's
// start until its Argo CD holds them all.
func (s *system) bootstrap(ctx context.Context, apps int) (time.Duration, error) {
	key, err := events.LoadPublicKey(s.dir + "/hub.pub")
	if err != nil {
		return 0, err
	}
	f, err := sim.NewFleet(sim.FleetConfig{Clusters: 1, Prefix: "boot", Hub: s.hub, HubKey: key,
		Conn: []kgo.Opt{kgo.SeedBrokers(seeds(s.cfg.kafka)...)}, Topics: s.topics})
	if err != nil {
		return 0, err
	}
	if err := f.Join(ctx); err != nil {
		return 0, err
	}
	name := f.Names()[0]
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range apps {
		g.Go(func() error {
			m := json.RawMessage(fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application",
"metadata":{"name":"boot-%03d","namespace":"argocd"},
"spec":{"project":"default","source":{"repoURL":"https://git.example.com/fleet.git","path":"apps/boot-%03d","targetRevision":%q},
"destination":{"server":"https://kubernetes.default.svc","namespace":"boot-%03d"}}}`, i, i, newRevision(), i))
			_, err := s.hub.Apply(gctx, api.KindApplications, api.ApplyRequest{Clusters: []string{name}, Manifest: m}, api.WriteOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("place apps on %s: %w", name, err)
	}
	// A spoke is installed some time after its cluster's Applications
	// were placed: start it once they are older than the clock margin, so
	// that what is measured is the bootstrap, not the margin's wait.
	margin := s.cfg.margin
	if margin == 0 {
		margin = 2 * time.Second
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(margin + time.Second):
	}
	argo, _ := f.Cluster(name)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f.Run(rctx) }()
	for len(argo.Applications()) < apps {
		select {
		case err := <-done:
			return 0, fmt.Errorf("agent of %s stopped: %w", name, err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("%s holds %d of %d Applications after 5 minutes", name, len(argo.Applications()), apps)
		}
	}
	took := time.Since(start)
	stop()
	return took, <-done
}

// ingest stops the projector, appends total status deltas signed by the
// fleet's clusters, per to an event, starts the projector again and
// measures how fast it folds them: events per second from its first
// commit past them to its last.
func (s *system) ingest(ctx context.Context, clusters []string, total, per int) (float64, error) {
	if err := s.projProc.Stop(30 * time.Second); err != nil {
		return 0, fmt.Errorf("stop projector: %w", err)
	}
	status := s.topics[events.TopicStatus]
	if err := s.publishStatus(ctx, clusters, total, per); err != nil {
		return 0, err
	}
	ends, err := s.adm.ListEndOffsets(ctx, status)
	if err != nil {
		return 0, err
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	base, err := s.committed(ctx, status)
	if err != nil {
		return 0, err
	}
	if err := s.startProjector(ctx); err != nil {
		return 0, err
	}
	var first time.Time
	var firstAt int64
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		at, err := s.committed(ctx, status)
		if err != nil {
			return 0, err
		}
		if first.IsZero() && at > base {
			first, firstAt = time.Now(), at
		}
		if at >= end {
			if took := time.Since(first); took > 0 && at > firstAt {
				return float64(at-firstAt) / took.Seconds(), nil
			}
			return 0, errors.New("folded within one poll: publish more events")
		}
	}
	return 0, errors.New("the projector did not catch up in 10 minutes")
}

func (s *system) committed(ctx context.Context, topic string) (int64, error) {
	os, err := s.adm.FetchOffsets(ctx, s.prefix+"projector")
	if err != nil {
		return 0, err
	}
	var sum int64
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At > 0 {
			sum += o.At
		}
	})
	return sum, nil
}

// publishStatus appends total application status deltas, perEvent to
// an event, round robin over the clusters, each signed with its cluster's
// key, to Applications the simulated clusters do not hold (so they change
// nothing the run watches).
func (s *system) publishStatus(ctx context.Context, clusters []string, total, perEvent int) error {
	cl, err := kgo.NewClient(append(events.ProducerOpts(nil), kgo.SeedBrokers(seeds(s.cfg.kafka)...), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	each := (total + len(clusters) - 1) / len(clusters)
	for i, c := range clusters {
		n := min(each, total-i*each)
		if n <= 0 {
			break
		}
		g.Go(func() error {
			keys, err := spoke.LoadKeys(s.keyDir(c))
			if err != nil {
				return err
			}
			signer, err := events.NewSigner(keys.Signing)
			if err != nil {
				return err
			}
			p, err := events.NewProducer(cl, signer, s.topics)
			if err != nil {
				return err
			}
			es, err := statusDeltas(c, n, perEvent)
			if err != nil {
				return err
			}
			_, err = p.Publish(gctx, es...)
			return err
		})
	}
	return g.Wait()
}

// keyDir is where the spoke pack that runs cluster c keeps its keys.
func (s *system) keyDir(c string) string { return s.dir + "/spokes/" + c }

// liveQuestions asks n live questions, one at a time, each for the tree of
// a random Application on a random cluster, through the hub's API, and
// returns how long each call took, from the hub's question on the log to
// the agent's answer read back; unanswered counts the calls that ended
// without one (a 504 after liveTimeout).
func (s *system) liveQuestions(ctx context.Context, clusters []string, apps, n int) (took []time.Duration, unanswered int, err error) {
	for range n {
		cluster, app := clusters[randN(len(clusters))], fmt.Sprintf("app-%02d", randN(apps))
		start := time.Now()
		_, err := s.hub.Tree(ctx, cluster, "argocd", app, liveTimeout)
		switch {
		case api.StatusOf(err) == http.StatusGatewayTimeout:
			unanswered++
		case err != nil:
			return nil, 0, fmt.Errorf("tree of %s on %s: %w", app, cluster, err)
		default:
			took = append(took, time.Since(start))
		}
	}
	slices.Sort(took)
	return took, unanswered, nil
}

// liveTimeout is how long a benchmark's live question waits.
const liveTimeout = 10 * time.Second
