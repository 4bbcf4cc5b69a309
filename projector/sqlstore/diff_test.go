package sqlstore

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
)

// diffAll runs Diff and returns the differences and the tables' counts.
func diffAll(t *testing.T, a, b *Store) ([]Difference, map[string]TableComparison) {
	t.Helper()
	var ds []Difference
	tables, err := Diff(t.Context(), a, b, func(d Difference) error {
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	out := map[string]TableComparison{}
	for _, c := range tables {
		out[c.Table] = c
	}
	return ds, out
}

// testDiff: two stores that folded the same batch match, every table
// compared; a changed column, a row only one holds and a changed offset
// are each reported, on the side and column they are.
func testDiff(t *testing.T, b backend) {
	a, c := b.fresh(t), b.fresh(t)
	commit(t, a, fixture())
	commit(t, c, fixture())
	ds, tables := diffAll(t, a, c)
	if len(ds) != 0 {
		t.Fatalf("stores of one batch differ: %+v", ds)
	}
	if len(tables) != len(compared) {
		t.Errorf("%d tables compared, want %d", len(tables), len(compared))
	}
	for _, name := range []string{"offsets", "registrations", "beats", "desired_apps", "observed_apps", "acks", "calls",
		"call_events", "audit_entries", "deployments", "gaps", "chain_heads"} {
		if tables[name].RowsA == 0 || tables[name].RowsA != tables[name].RowsB {
			t.Errorf("table %s: %+v, want rows on both sides", name, tables[name])
		}
	}

	change := &projector.Batch{
		Offsets: map[projector.Partition]int64{pStatus0: 21},
		Beats:   []projector.ClusterBeat{fixture().Beats[0]},
		Registrations: []projector.ClusterRegistration{
			{Cluster: "c9", Registered: true, Labels: map[string]string{"env": "dev"}, RegisteredAt: day(1, 3)}},
	}
	change.Beats[0].Seq = 8
	commit(t, c, change)
	ds, tables = diffAll(t, a, c)
	want := []Difference{
		{Table: "offsets", Key: []string{"argosy.status", "0"}, Columns: []ColumnDifference{{Column: "next_offset", A: "20", B: "21"}}},
		{Table: "registrations", Key: []string{"c9"}, Only: "b"},
		{Table: "beats", Key: []string{"c1"}, Columns: []ColumnDifference{{Column: "seq", A: "7", B: "8"}}},
	}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	if r := tables["registrations"]; r.RowsA != 2 || r.RowsB != 3 || r.Differences != 1 {
		t.Errorf("registrations compared %+v, want 2 rows, 3 rows, 1 differing", r)
	}
	// The other way round, the row is A's.
	ds, _ = diffAll(t, c, a)
	if len(ds) != 3 || ds[1].Only != "a" {
		t.Errorf("reversed differences %+v, want the registration only in A", ds)
	}
	stop := errors.New("stop")
	if _, err := Diff(t.Context(), a, c, func(Difference) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Diff = %v, want report's error", err)
	}
}

// TestOpenExistingCreatesNothing: a SQLite file that is not there is an
// error, and stays not there; a database that is not an Argosy store is
// refused unchanged; a store opens to read only.
func TestOpenExistingCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := OpenExisting(t.Context(), "sqlite://"+missing); err == nil {
		t.Error("OpenExisting of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenExisting left %s behind: %v", missing, err)
	}

	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = OpenExisting(t.Context(), "sqlite://"+other)
	if err == nil || !strings.Contains(err.Error(), "not a readable Argosy store") {
		t.Errorf("OpenExisting of another database = %v, want not a readable Argosy store", err)
	}

	path := filepath.Join(dir, "views.db")
	s, err := OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, fixture())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenExisting(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Commit(t.Context(), fixture()); err == nil {
		t.Error("a store opened by OpenExisting took a commit")
	}
	if _, err := OpenExisting(t.Context(), "mysql://x"); err == nil {
		t.Error("OpenExisting of an unknown scheme succeeded")
	}
}

// TestBooleanColumnsKnown: every BOOLEAN column of the schema is one Diff
// reads as a boolean, so that SQLite's 1 equals PostgreSQL's true.
func TestBooleanColumnsKnown(t *testing.T) {
	col := regexp.MustCompile(`(\w+) BOOLEAN`)
	n := 0
	for _, stmts := range migrations {
		for _, s := range stmts {
			for _, m := range col.FindAllStringSubmatch(s, -1) {
				n++
				if !booleanCols[m[1]] {
					t.Errorf("column %s is BOOLEAN, and not in booleanCols", m[1])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no BOOLEAN column found in the migrations")
	}
}
