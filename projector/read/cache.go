package read

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// DefaultSummaryTTL is how long a SummaryCache keeps the clusters'
// summaries by default.
const DefaultSummaryTTL = time.Second

// SummaryCache is a Query whose ClusterSummaries are read at most once per
// ttl, so that paging, filtering and sorting a large fleet costs one read
// of the summaries per ttl rather than one per page. A summary is then up
// to ttl old; freshness, judged from heartbeat ages at read time against
// thresholds of a minute and more, tolerates seconds. Concurrent misses
// share one read; errors are not kept. The other methods go to the Query.
type SummaryCache struct {
	projector.Query
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex // held across a read, so that misses share it
	at   time.Time
	sums []projector.ClusterSummary
}

// NewSummaryCache returns q with its summaries kept for ttl.
func NewSummaryCache(q projector.Query, ttl time.Duration, now func() time.Time) *SummaryCache {
	return &SummaryCache{Query: q, ttl: ttl, now: now}
}

// ClusterSummaries returns the kept summaries while they are younger than
// ttl, and reads them again otherwise. The caller may change the slice.
func (c *SummaryCache) ClusterSummaries(ctx context.Context) ([]projector.ClusterSummary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.sums == nil || !now.Before(c.at.Add(c.ttl)) || now.Before(c.at) {
		sums, err := c.Query.ClusterSummaries(ctx)
		if err != nil {
			return nil, err
		}
		c.sums, c.at = sums, now
	}
	return slices.Clone(c.sums), nil
}
