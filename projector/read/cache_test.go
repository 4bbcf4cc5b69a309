package read_test

import (
	"context"
	"errors"
	"net/http"
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

// TestOneClustersAppsReadOneCluster: the Applications of one cluster, by
// path or by filter, take their freshness from that cluster alone, not
// from a read of every cluster's summary: in a fleet of thousands the
// read API's most frequent call must not cost one row per cluster. The
// answer is the one every summary gives.
func TestOneClustersAppsReadOneCluster(t *testing.T) {
	for _, target := range []string{"/api/v1/clusters/prod-eu/applications", "/api/v1/applications?cluster=prod-eu"} {
		q := &counting{Query: readtest.Fleet()}
		rec := get(t, newHandler(q), http.MethodGet, target)
		if rec.Code != http.StatusOK || q.reads != 0 {
			t.Errorf("%s: %d, %d reads of every summary, want 0\n%s", target, rec.Code, q.reads, rec.Body)
		}
		whole := get(t, newHandler(readtest.Fleet()), http.MethodGet, "/api/v1/applications")
		want := map[string]read.App{}
		for _, a := range decode[read.List[read.App]](t, whole.Body.Bytes()).Items {
			want[a.Namespace+"/"+a.Name+"@"+a.Cluster] = a
		}
		got := decode[read.List[read.App]](t, rec.Body.Bytes()).Items
		if len(got) == 0 {
			t.Fatalf("%s: no applications", target)
		}
		for _, a := range got {
			if w := want[a.Namespace+"/"+a.Name+"@"+a.Cluster]; a.ClusterState != w.ClusterState || a.Stale != w.Stale {
				t.Errorf("%s: %s/%s is %s (stale %v); over every summary %s (stale %v)", target, a.Namespace, a.Name, a.ClusterState, a.Stale, w.ClusterState, w.Stale)
			}
		}
	}
}
