package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxStmts bounds the statements a Store keeps prepared. The read queries
// are built from a few fixed parts (which filters are set, chunks of a
// power of two of keys), so a Store meets a few dozen texts; past the
// bound, a query runs unprepared as before.
const maxStmts = 256

// stmtCache keeps the read pool's statements prepared, by query text:
// SQLite's driver parses a statement it is given anew on every query, and
// the read API's view polls run the same few queries again and again.
// database/sql prepares a statement on each connection the first time it
// runs there and keeps it for the connection's life. pgx caches its own
// prepared statements by text too; one path serves both engines. The zero
// value is ready to use.
type stmtCache struct {
	mu     sync.Mutex
	by     map[string]*sql.Stmt
	closed bool
}

// query runs q with args on db through q's prepared statement, preparing
// it on first use.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, q string, args []any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, db, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return db.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// stmt returns q's statement, prepared on db, or nil once maxStmts are
// kept or the cache is closed. Two first uses at once may both prepare;
// the first one kept wins and the other is closed.
func (c *stmtCache) stmt(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.by[q]
	full := c.closed || len(c.by) >= maxStmts
	c.mu.Unlock()
	if ok || full {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.by[q]; ok {
		return kept, st.Close()
	}
	if c.closed || len(c.by) >= maxStmts {
		// Closed, or filled, while q was prepared: q is for this query only.
		return nil, st.Close()
	}
	if c.by == nil {
		c.by = map[string]*sql.Stmt{}
	}
	c.by[q] = st
	return st, nil
}

// size returns how many statements are kept.
func (c *stmtCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}

// close closes every statement kept; later queries run unprepared.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for q, st := range c.by {
		errs = append(errs, st.Close())
		delete(c.by, q)
	}
	return errors.Join(errs...)
}
