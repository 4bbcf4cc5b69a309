package spoke

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// Counts are the Applications the spoke last reported, by state.
type Counts struct {
	Total    int
	BySync   map[string]int
	ByHealth map[string]int
}

// Counts returns the counts of the Applications whose status was last
// published.
func (r *Reporter) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Counts{BySync: map[string]int{}, ByHealth: map[string]int{}}
	for _, s := range r.sent {
		if s.status.Deleted {
			continue
		}
		c.Total++
		if s.status.Sync != nil {
			c.BySync[s.status.Sync.Status]++
		}
		if s.status.Health != nil {
			c.ByHealth[s.status.Health.Status]++
		}
	}
	return c
}

// Heartbeater publishes a heartbeat at every interval: the agent's version
// and mode, its Applications by state, and how far it has read the config
// partition.
type Heartbeater struct {
	cluster                     string
	agentVersion, argoCDVersion string
	mode                        string
	interval                    time.Duration
	publish                     Publisher
	counts                      func() Counts
	progress                    func(ctx context.Context) (next, lag int64, err error)
	log                         *slog.Logger
}

// newHeartbeater returns the heartbeater of cluster, which publishes
// through pub. counts, if not nil, gives the Applications by state;
// progress, if not nil, gives the next config offset to apply and the
// records still to apply (an error leaves them out of that heartbeat). It
// takes the WithHeartbeatInterval, WithMode, WithAgentVersion,
// WithArgoCDVersion and WithLogger options.
func newHeartbeater(cluster string, pub Publisher, counts func() Counts,
	progress func(ctx context.Context) (next, lag int64, err error), opts ...Option) (*Heartbeater, error) {
	if cluster == "" || pub == nil {
		return nil, errors.New("heartbeater: a cluster and a publisher are required")
	}
	o := newOptions(opts)
	if o.heartbeat <= 0 {
		return nil, errors.New("heartbeater: the interval must be positive")
	}
	return &Heartbeater{cluster: cluster, agentVersion: o.agentVersion, argoCDVersion: o.argoCDVersion, mode: o.mode,
		interval: o.heartbeat, publish: pub, counts: counts, progress: progress, log: o.Log}, nil
}

// Run sends heartbeats until ctx ends. A heartbeat that cannot be sent is
// dropped: the next one carries the news.
func (h *Heartbeater) Run(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	var seq int64
	for {
		seq++
		h.beat(ctx, seq)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (h *Heartbeater) beat(ctx context.Context, seq int64) {
	hb := schemas.Heartbeat{Cluster: h.cluster, AgentVersion: h.agentVersion, ArgoCDVersion: h.argoCDVersion, Mode: h.mode, Seq: seq}
	if h.counts != nil {
		c := h.counts()
		hb.Applications, hb.ApplicationsBySync, hb.ApplicationsByHealth = c.Total, c.BySync, c.ByHealth
	}
	if h.progress != nil {
		if next, lag, err := h.progress(ctx); err == nil {
			hb.ConfigOffset, hb.ConfigLag = next, lag
		}
	}
	e, err := events.New(Source(h.cluster), events.TypeHeartbeat, events.Subject{Cluster: h.cluster}.String(), h.cluster, hb)
	if err == nil {
		_, err = h.publish.Publish(ctx, e)
	}
	if err != nil && ctx.Err() == nil {
		h.log.WarnContext(ctx, "heartbeat not sent", "err", err)
	}
}
