package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite" // also registers the "sqlite" driver

	"github.com/argosyproj/argosy/projector"
)

// Store is the projector's views in a SQL database. It is safe for
// concurrent use; Close it when done.
type Store struct {
	d dialect
	// w writes (Commit, migrations); r reads. They are one pool in
	// PostgreSQL. SQLite has one writer connection, and readers beside it
	// that see the last committed state (WAL).
	w, r *sql.DB
	// maxSpec and maxAnswer bound the specs one read carries, each and
	// together (specs.go); zero is projector.MaxSpecBytes and
	// projector.MaxAnswerSpecBytes. Tests lower them.
	maxSpec, maxAnswer int
	// stmts are the read queries' prepared statements on r.
	stmts stmtCache
}

var (
	_ projector.Store = (*Store)(nil)
	_ projector.Query = (*Store)(nil)
)

// dialect is what differs between the engines. The shared SQL uses '?'
// placeholders and the tokens $JSON and $BLOB for column types.
type dialect struct {
	// json is the type of JSON columns; blob the type of byte columns.
	json, blob string
	// numbered placeholders ($1, $2, ...) instead of '?'.
	numbered bool
	// maxParams bounds the parameters of one statement. PostgreSQL takes
	// 65,535. SQLite takes 32,766, but modernc.org/sqlite binds them in
	// time quadratic in their number, so it gets small statements, which
	// cost it no round trips.
	maxParams int
	// prepare Commit's statements in the transaction: SQLite's driver
	// parses every statement it is given, while pgx caches prepared
	// statements by their text.
	prepare bool
	// lock is the statement that starts the migration transaction, for
	// engines whose transactions do not exclude each other by themselves.
	lock string
	// withoutSpec is a JSON column's object without its member spec, as
	// a format of the column.
	withoutSpec string
	// noJIT starts a read transaction without PostgreSQL's JIT, which
	// for one cheap query over every cluster (Backlogs) costs more to
	// compile than the query takes to run.
	noJIT string
}

// migrationLock is the key of PostgreSQL's advisory lock around
// migrations: "argosy" in ASCII.
const migrationLock = 0x6172676f7379

var (
	sqliteDialect = dialect{json: "TEXT", blob: "BLOB", maxParams: 256, prepare: true,
		withoutSpec: `json_remove(%s, '$.spec')`}
	postgres = dialect{json: "JSONB", blob: "BYTEA", numbered: true, maxParams: 30000,
		lock:        "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(migrationLock, 10) + ")",
		withoutSpec: `(%s - 'spec')`, noJIT: "SET LOCAL jit = off"}
)

// bind returns q with its '?' placeholders in the dialect's form. The
// shared SQL has no '?' anywhere else.
func (d dialect) bind(q string) string {
	if !d.numbered {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// OpenSQLite opens (creating it if need be) the SQLite database at path and
// brings its schema up to date. The database is in WAL mode, with one
// writer connection whose transactions take the write lock as they begin,
// and a busy timeout so that another process's writer is waited for.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	// synchronous=NORMAL in WAL mode may lose the last transactions on a
	// power cut, but never half of one: rows and offsets go together.
	w, err := sql.Open("sqlite", sqliteDSN(path, "_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL"))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	s := &Store{d: sqliteDialect, w: w, r: w}
	if err := migrateSQLite(ctx, s); err != nil {
		return nil, errors.Join(fmt.Errorf("open sqlite %s: %w", path, err), w.Close())
	}
	r, err := sql.Open("sqlite", sqliteDSN(path, "_query_only=1"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open sqlite %s: %w", path, err), w.Close())
	}
	// Every reader stays open: each keeps the read queries it has
	// prepared (stmts.go), which a connection closed when idle would lose.
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	r.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	s.r = r
	return s, nil
}

// migrateSQLite migrates s, trying again while SQLite answers SQLITE_BUSY
// without waiting out its busy timeout, as it does while another process
// creates the file or switches it to WAL.
func migrateSQLite(ctx context.Context, s *Store) error {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := s.migrate(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a locked database.
const sqliteBusy = 5

// sqliteDSN is a file: URI for path: '%', '?' and '#' in the path are
// escaped so that they stay part of the name.
func sqliteDSN(path, params string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?_busy_timeout=10000&" + params
}

// OpenPostgres connects to the PostgreSQL database at dsn (a URL or a
// key=value string, as pgx takes) and brings its schema up to date.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxIdleConns(4)
	s := &Store{d: postgres, w: db, r: db}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open postgres %s@%s/%s: %w", cfg.User, cfg.Host, cfg.Database, err), db.Close())
	}
	return s, nil
}

// Ping reports whether the database answers, on a reading connection (the
// one SQLite writer may be busy with a long fold; a PostgreSQL server that
// is gone fails either way). The projector's and the hub's readiness use it.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	serr := s.stmts.close()
	if s.r == s.w {
		return errors.Join(serr, s.w.Close())
	}
	return errors.Join(serr, s.r.Close(), s.w.Close())
}

// rollback ends tx after err, and adds the rollback's own failure to it.
func rollback(tx *sql.Tx, err error) error {
	if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
		return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
	}
	return err
}

// Open opens the store at dsn, sqlite://PATH or postgres://…, as
// OpenSQLite or OpenPostgres does.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		return OpenSQLite(ctx, path)
	}
	if !IsPostgres(dsn) {
		return nil, fmt.Errorf("store %q: want sqlite://PATH or postgres://…", dsn)
	}
	return OpenPostgres(ctx, dsn)
}

// IsPostgres reports whether dsn names a PostgreSQL store.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// OpenExisting opens the store at dsn, sqlite://PATH or postgres://…, only
// to read it: it creates and migrates nothing, and fails unless the
// database holds a store of this build's schema version.
func OpenExisting(ctx context.Context, dsn string) (*Store, error) {
	var s *Store
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		if path == "" {
			return nil, errors.New("open sqlite: empty path")
		}
		// mode=ro fails on a file that is not there rather than creating it.
		db, err := sql.Open("sqlite", sqliteDSN(path, "mode=ro&_query_only=1"))
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		s = &Store{d: sqliteDialect, w: db, r: db}
	} else {
		if !IsPostgres(dsn) {
			return nil, fmt.Errorf("store %q: want sqlite://PATH or postgres://…", dsn)
		}
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		db := stdlib.OpenDB(*cfg)
		s = &Store{d: postgres, w: db, r: db}
	}
	v, err := s.SchemaVersion(ctx)
	if err == nil && v != len(migrations) {
		err = fmt.Errorf("schema version %d, where this build's is %d", v, len(migrations))
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open %s: not a readable Argosy store: %w", redact(dsn), err), s.Close())
	}
	return s, nil
}

// redact drops a DSN's password, for messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}
