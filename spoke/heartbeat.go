package spoke

import (
	"context"
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

// Heartbeater publishes a heartbeat every Interval: the agent's version and
// mode, its Applications by state, and how far it has read the config
// partition.
type Heartbeater struct {
	Cluster, Source    string
	AgentVersion, Mode string
	ArgoCDVersion      string
	Interval           time.Duration
	Publish            Publisher
	Counts             func() Counts
	// Progress returns the next config offset to apply and the records
	// still to apply; nil, or an error, leaves them out.
	Progress func(ctx context.Context) (next, lag int64, err error)
	Log      *slog.Logger
}

// Run sends heartbeats until ctx ends. A heartbeat that cannot be sent is
// dropped: the next one carries the news.
func (h *Heartbeater) Run(ctx context.Context) error {
	t := time.NewTicker(h.Interval)
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
	hb := schemas.Heartbeat{Cluster: h.Cluster, AgentVersion: h.AgentVersion, ArgoCDVersion: h.ArgoCDVersion, Mode: h.Mode, Seq: seq}
	if h.Counts != nil {
		c := h.Counts()
		hb.Applications, hb.ApplicationsBySync, hb.ApplicationsByHealth = c.Total, c.BySync, c.ByHealth
	}
	if h.Progress != nil {
		if next, lag, err := h.Progress(ctx); err == nil {
			hb.ConfigOffset, hb.ConfigLag = next, lag
		}
	}
	e, err := events.New(h.Source, events.TypeHeartbeat, events.Subject{Cluster: h.Cluster}.String(), h.Cluster, hb)
	if err == nil {
		_, err = h.Publish.Publish(ctx, e)
	}
	if err != nil && ctx.Err() == nil && h.Log != nil {
		h.Log.WarnContext(ctx, "heartbeat not sent", "err", err)
	}
}
