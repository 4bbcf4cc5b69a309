package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// parsingConn counts the statements SQLite is given to parse on one
// connection: each prepared, and each query run unprepared.
type parsingConn struct {
	sqliteConn
	parses *atomic.Int64
}

// sqliteConn is what database/sql uses of modernc.org/sqlite's connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.ConnBeginTx
}

func (c parsingConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c parsingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.parses.Add(1)
	return c.sqliteConn.PrepareContext(ctx, q)
}

func (c parsingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.parses.Add(1)
	return c.sqliteConn.QueryContext(ctx, q, args)
}

// parsingConnector opens SQLite connections that count their parses.
type parsingConnector struct {
	dsn    string
	parses *atomic.Int64
}

func (c parsingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		return nil, errors.Join(errors.New("modernc.org/sqlite's connection lacks a method database/sql uses"), conn.Close())
	}
	return parsingConn{sc, c.parses}, nil
}

func (parsingConnector) Driver() driver.Driver { return &sqlite.Driver{} }

// TestViewPollsParseOnce: once a reader connection has run the read API's
// view poll, polling again, of any cluster, parses no statement: the
// queries run prepared. A prepared query still reads what was committed
// after it was prepared.
func TestViewPollsParseOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "views.db")
	filled := sqliteBackend.store(t, path)
	fillFleet(t, filled)
	// The same database, read through one connection that counts parses.
	var parses atomic.Int64
	s := &Store{d: sqliteDialect, w: filled.w, r: sql.OpenDB(parsingConnector{dsn: sqliteDSN(path, "_query_only=1"), parses: &parses})}
	t.Cleanup(func() {
		if err := s.r.Close(); err != nil {
			t.Error(err)
		}
	})
	s.r.SetMaxOpenConns(1)
	poll := func(cluster string) []projector.AppRow {
		t.Helper()
		if _, ok, err := s.Cluster(t.Context(), cluster); err != nil || !ok {
			t.Fatalf("cluster %s: %v, %v", cluster, ok, err)
		}
		apps, err := s.Apps(t.Context(), projector.AppFilter{Cluster: cluster})
		if err != nil {
			t.Fatalf("apps of %s: %v", cluster, err)
		}
		if _, err := s.ClusterSummaries(t.Context()); err != nil {
			t.Fatal(err)
		}
		return apps
	}
	poll("cluster-00")
	first := parses.Load()
	for _, c := range []string{"cluster-01", "cluster-02", "cluster-00", "cluster-99"} {
		poll(c)
	}
	if again := parses.Load() - first; again != 0 {
		t.Errorf("four polls after the first parsed %d statements (the first %d), want none", again, first)
	}

	var l eventLog
	l.next = map[projector.Partition]int64{{Topic: "argosy.status", Partition: 0}: 1000}
	l.add(t, projector.Partition{Topic: "argosy.status", Partition: 0}, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		events.TypeApplicationStatus, app("cluster-00", "late"), &schemas.ApplicationStatusChanged{
			Resource: schemas.Resource{Cluster: "cluster-00", Namespace: "argocd", Name: "late"}, Seq: 1, Full: true,
			Sync: &schemas.SyncStatus{Status: "Synced"}})
	fold(t, s, projector.NewView(), l.out)
	if apps := poll("cluster-00"); len(apps) != pollApps+1 {
		t.Errorf("after one more Application was committed, the poll read %d, want %d", len(apps), pollApps+1)
	}
	if err := s.stmts.close(); err != nil || s.stmts.size() != 0 {
		t.Errorf("close: %v, %d statements kept; want none", err, s.stmts.size())
	}
}

// TestStmtCacheIsBounded: however many query texts a Store meets, it keeps
// at most maxStmts prepared; the queries past the bound, and every query
// after close, still run, unprepared.
func TestStmtCacheIsBounded(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "bound.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c stmtCache
	run := func(i int) {
		t.Helper()
		rows, err := c.query(t.Context(), db, "SELECT ? /* "+strconv.Itoa(i)+" */", []any{i})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got int
		if !rows.Next() || rows.Scan(&got) != nil || got != i {
			t.Fatalf("query %d answered %d", i, got)
		}
	}
	for i := range maxStmts + 50 {
		run(i)
	}
	if n := c.size(); n != maxStmts {
		t.Errorf("%d query texts kept %d statements, want %d", maxStmts+50, n, maxStmts)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	run(1)
	if n := c.size(); n != 0 {
		t.Errorf("after close the cache keeps %d statements", n)
	}
}
