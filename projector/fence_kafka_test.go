//go:build integration

package projector_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/pgtest"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// gatedStore holds its first commit until release is closed, telling
// entered when it gets there, and keeps that commit's error.
type gatedStore struct {
	*sqlstore.Store
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	first            error
	committed        bool
	// held are the partitions of the stalled batch, set before entered
	// closes.
	held map[projector.Partition]bool
}

func (g *gatedStore) Commit(ctx context.Context, b *projector.Batch) error {
	held := false
	g.once.Do(func() { held = true })
	if !held {
		return g.Store.Commit(ctx, b)
	}
	g.held = map[projector.Partition]bool{}
	for p := range b.Offsets {
		g.held[p] = true
	}
	close(g.entered)
	<-g.release
	err := g.Store.Commit(ctx, b)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.first, g.committed = err, true
	return err
}

// signalStore tells committed after its first commit that lands on one of
// the partitions of overlap (any partition if it is nil).
type signalStore struct {
	*sqlstore.Store
	committed chan struct{}
	once      sync.Once
	overlap   map[projector.Partition]bool
}

func (s *signalStore) Commit(ctx context.Context, b *projector.Batch) error {
	err := s.Store.Commit(ctx, b)
	if err != nil {
		return err
	}
	for p := range b.Offsets {
		if s.overlap == nil || s.overlap[p] {
			s.once.Do(func() { close(s.committed) })
		}
	}
	return err
}

// TestRunnerFencedAfterLosingItsPartitionsMidStep makes a zombie: replica
// A polls the whole log and stalls in its first commit, past the group's
// rebalance timeout, while replica B joins, takes every partition and
// commits its first small step. When A's commit goes on, its batch ends
// beyond B's offsets, so a fence that only refuses offsets moving back
// would take it and fold B's records a second time. The commit is a
// compare-and-set on where A's step began, so it fails, and the views and
// audit chains end as one clean fold's, on SQLite and on PostgreSQL.
func TestRunnerFencedAfterLosingItsPartitionsMidStep(t *testing.T) {
	stores := map[string]func(t *testing.T) (a, b *sqlstore.Store){
		"sqlite": func(t *testing.T) (a, b *sqlstore.Store) {
			path := filepath.Join(t.TempDir(), "views.db")
			return openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenSQLite(ctx, path) }),
				openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenSQLite(ctx, path) })
		},
		"postgres": func(t *testing.T) (a, b *sqlstore.Store) {
			dsn := pgtest.Database(t)
			return openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenPostgres(ctx, dsn) }),
				openStore(t, func(ctx context.Context) (*sqlstore.Store, error) { return sqlstore.OpenPostgres(ctx, dsn) })
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.workload(10)
			ends := r.endOffsets(r.folded()...)
			want := r.fold()

			sa, sb := open(t)
			a := &gatedStore{Store: sa, entered: make(chan struct{}), release: make(chan struct{})}
			group := r.topics[events.TopicConfig] + ".zombie"
			fast := []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t)), kgo.RebalanceTimeout(3 * time.Second)}
			_, stopA := startRunnerWith(t, r, fast, a, projector.WithGroup(group))
			select {
			case <-a.entered:
			case <-time.After(time.Minute):
				close(a.release)
				t.Fatal("replica A never reached its first commit")
			}
			// B's first commit that matters is one on a partition of A's
			// stalled batch: the one that makes A's commit stale.
			b := &signalStore{Store: sb, committed: make(chan struct{}), overlap: a.held}
			_, stopB := startRunnerWith(t, r, fast, b, projector.WithGroup(group), projector.WithMaxRecords(5))
			select {
			case <-b.committed:
			case <-time.After(time.Minute):
				close(a.release)
				t.Fatal("replica B never committed while A stalled: A was not expelled from the group")
			}
			close(a.release)
			if err := waitCaughtUp(t.Context(), sb, ends, nil); err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(stopA(), stopB()); err != nil {
				t.Fatal(err)
			}
			a.mu.Lock()
			first := a.first
			a.mu.Unlock()
			if !errors.Is(first, sqlstore.ErrStaleOffset) {
				t.Errorf("the zombie's commit = %v, want ErrStaleOffset", first)
			}
			if diff := cmp.Diff(readViews(t, want), readViews(t, sb)); diff != "" {
				t.Errorf("views differ from a clean fold (-clean +replicas):\n%s", diff)
			}
			compareChains(t, want, sb)
		})
	}
}

// openStore opens a store with open and closes it at the test's end.
func openStore(t *testing.T, open func(context.Context) (*sqlstore.Store, error)) *sqlstore.Store {
	t.Helper()
	s, err := open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// compareChains checks that got holds the audit chains of want, a clean
// fold of the same log, each intact.
func compareChains(t *testing.T, want, got *sqlstore.Store) {
	t.Helper()
	parts, err := want.ChainPartitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) == 0 {
		t.Fatal("no audit chain to compare")
	}
	for _, p := range parts {
		wantChain, err := want.Chain(t.Context(), p, -1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		gotChain, err := got.Chain(t.Context(), p, -1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantChain, gotChain); diff != "" {
			t.Errorf("audit chain of %v (-clean +replicas):\n%s", p, diff)
		}
		if br := projector.Verify(gotChain); br != nil {
			t.Errorf("audit chain of %v broken: %+v", p, br)
		}
	}
}
