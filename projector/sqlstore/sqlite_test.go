package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

var sqliteBackend = backend{
	database: func(t testing.TB) string { return filepath.Join(t.TempDir(), "views.db") },
	open:     OpenSQLite,
	unmigrated: func(path string) (*Store, error) {
		db, err := sql.Open("sqlite", sqliteDSN(path, "_txlock=immediate&_journal_mode=WAL"))
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		return &Store{d: sqliteDialect, w: db, r: db}, nil
	},
}

func TestSQLite(t *testing.T) { testStore(t, sqliteBackend) }

// TestSQLitePath: characters that mean something in a file: URI stay part
// of the file's name.
func TestSQLitePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a?b#c%20d.db")
	s := sqliteBackend.store(t, path)
	commit(t, s, fixture())
	matches, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range matches {
		found = found || m == path
	}
	if !found {
		t.Errorf("files in %s: %v; want %s", dir, matches, path)
	}
	var mode string
	if err := s.w.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestSQLiteEmptyPath(t *testing.T) {
	if s, err := OpenSQLite(context.Background(), ""); err == nil {
		t.Errorf("OpenSQLite(\"\") = %v, want an error", s.Close())
	}
}
