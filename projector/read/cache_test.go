package read_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

// counting counts the summary reads of a Query.
type counting struct {
	*readtest.Query
	reads int
}

func (c *counting) ClusterSummaries(ctx context.Context) ([]projector.ClusterSummary, error) {
	c.reads++
	return c.Query.ClusterSummaries(ctx)
}

// TestSummaryCache: within the ttl the summaries are read once, a caller's
// change to its copy stays its own, and an error is not kept.
func TestSummaryCache(t *testing.T) {
	q := &counting{Query: readtest.Fleet()}
	now := readtest.Now()
	c := read.NewSummaryCache(q, 2*time.Second, func() time.Time { return now })
	first, err := c.ClusterSummaries(t.Context())
	if err != nil || len(first) != 3 {
		t.Fatalf("summaries %v, %v", first, err)
	}
	first[0].Name = "changed"
	now = now.Add(time.Second)
	second, err := c.ClusterSummaries(t.Context())
	if err != nil || q.reads != 1 || second[0].Name != "prod-eu" {
		t.Errorf("within the ttl: %d reads, first %q (%v)", q.reads, second[0].Name, err)
	}
	now = now.Add(time.Second)
	q.Err = errors.New("disk on fire")
	if _, err := c.ClusterSummaries(t.Context()); err == nil {
		t.Error("an expired cache over a failing store answered")
	}
	q.Err = nil
	if _, err := c.ClusterSummaries(t.Context()); err != nil || q.reads != 3 {
		t.Errorf("after the error: %d reads, %v", q.reads, err)
	}
	if _, err := c.Apps(t.Context(), projector.AppFilter{}); err != nil {
		t.Errorf("the other methods go to the Query: %v", err)
	}
}
