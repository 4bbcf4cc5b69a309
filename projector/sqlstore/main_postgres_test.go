//go:build integration

package sqlstore

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/argosyproj/argosy/internal/testenv/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var postgresBackend = backend{
	database: pgtest.Database,
	open:     OpenPostgres,
	unmigrated: func(dsn string) (*Store, error) {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		db := stdlib.OpenDB(*cfg)
		return &Store{d: postgres, w: db, r: db}, nil
	},
}

func TestPostgres(t *testing.T) { testStore(t, postgresBackend) }

// serverBackends are benchmarked beside SQLite (bench_test.go).
var serverBackends = []namedBackend{{"postgres", postgresBackend}}

// TestDiffAcrossEngines: the same batch in SQLite and in PostgreSQL
// compares equal, JSONB and BOOLEAN columns included, either way round.
func TestDiffAcrossEngines(t *testing.T) {
	lite, pg := sqliteBackend.fresh(t), postgresBackend.fresh(t)
	commit(t, lite, fixture())
	commit(t, pg, fixture())
	for _, pair := range [][2]*Store{{lite, pg}, {pg, lite}} {
		ds, tables := diffAll(t, pair[0], pair[1])
		if len(ds) != 0 {
			t.Errorf("SQLite and PostgreSQL stores of one batch differ: %+v", ds)
		}
		if tables["observed_apps"].RowsA == 0 {
			t.Errorf("nothing compared: %+v", tables)
		}
	}
}
