//go:build integration

package sqlstore

import (
	"os"
	"testing"

	"github.com/argosyproj/argosy/internal/testenv/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var postgresBackend = backend{
	database: pgtest.Database,
	open:     OpenPostgres,
}

func TestPostgres(t *testing.T) { testStore(t, postgresBackend) }

// serverBackends are benchmarked beside SQLite (bench_test.go).
var serverBackends = []namedBackend{{"postgres", postgresBackend}}
