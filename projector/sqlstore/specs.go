package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/argosyproj/argosy/projector"
)

// A read that returns specs (Audit, Apps) reads their sizes with its rows,
// and takes them from the budget of one answer in the read's order
// (projector.SpecBudget): a spec larger than projector.MaxSpecBytes, or
// past the answer's projector.MaxAnswerSpecBytes, is never read, and a
// marker (projector.Marker, with the spec's size and depth 0) stands in
// its place. Specs up to inlineSpec come with the rows, so that a listing
// of ordinary specs is one query; larger ones within the budget are read
// by key after the rows. So the specs one read reads are at most twice
// its budget, and for a read of unlimited rows (Apps, Audit without a
// limit) twice inlineSpecBytes a row more. The read API takes specs from its answer's
// budget in the same order and by the same numbers, and passes the
// store's markers on: its answers for ordinary specs are what they were.

// specBudget is the budget of one read.
func (s *Store) specBudget() *projector.SpecBudget {
	maxSpec, answer := s.maxSpec, s.maxAnswer
	if maxSpec == 0 {
		maxSpec = projector.MaxSpecBytes
	}
	if answer == 0 {
		answer = projector.MaxAnswerSpecBytes
	}
	return projector.NewSpecBudgetOf(maxSpec, answer)
}

// inlineSpecBytes is the largest spec a read of unlimited rows reads with
// them: most Applications' specs are smaller.
const inlineSpecBytes = 4 << 10

// inlineSpec is the largest spec a read of up to rows rows reads with
// them (0: of any number), rather than by key after them: as much as
// keeps the specs read with the rows within one answer's budget, so that
// an answer of ordinary specs is one query, as before.
func (s *Store) inlineSpec(rows int) int {
	b := s.specBudget()
	if rows <= 0 {
		return min(inlineSpecBytes, b.Max())
	}
	return min(b.Left()/(2*rows), b.Max())
}

// specSize is a spec's size, NULL when there is none.
type specSize = sql.NullInt64

// sizeSQL is the size in bytes of the byte column col: length counts the
// bytes of a BLOB in SQLite and of a BYTEA in PostgreSQL, which both
// engines know without reading the value.
func sizeSQL(col string) string { return "length(" + col + ")" }

// localSpecSQL is the spec of the JSON column col (an observed
// Application's local), and localSizeSQL its size in bytes: in both
// engines -> takes a member, and octet_length counts bytes. SQLite's
// text is compact; PostgreSQL's spaces out JSONB, so there a spec
// measures more than the read API counts once it is compacted.
func localSpecSQL(col string) string { return col + ` -> 'spec'` }
func localSizeSQL(col string) string { return `octet_length(CAST(` + localSpecSQL(col) + ` AS TEXT))` }

// bounded is expr when size is at most maxSpec, else NULL: a spec is read
// only within the bound it was measured against. Rows are not rewritten
// between the two reads of an answer, but its cost stays bounded should
// one be.
func bounded(expr, size string, maxSpec int) string {
	return `CASE WHEN ` + size + ` <= ` + strconv.Itoa(maxSpec) + ` THEN ` + expr + ` END`
}

// spent takes each spec of sizes from b in order: set(i, marker) puts a
// marker in place of each spec b leaves out (one read with the rows
// too), and spent returns the indexes of those it keeps that are larger
// than inline, to read.
func spent(b *projector.SpecBudget, sizes []specSize, inline int, set func(i int, marker []byte)) []int {
	var keep []int
	for i, n := range sizes {
		if !n.Valid {
			continue
		}
		if why := b.Take(int(n.Int64)); why != "" {
			set(i, projector.Marker(projector.OmittedSpec{Reason: why, Bytes: int(n.Int64)}))
			continue
		}
		if n.Int64 > int64(inline) {
			keep = append(keep, i)
		}
	}
	return keep
}

// specsByKey reads the specs of keys with q, which selects a key's
// columns and then the spec, and term, which matches one key's columns
// to args(key); it calls set with each key and spec, which set copies if
// it keeps it: the driver's bytes are scanned without a copy of their own.
func specsByKey[K comparable](ctx context.Context, s *Store, q, term string, keys []K, args func(K) []any,
	dest func(*K) []any, set func(K, []byte) error) error {
	if len(keys) == 0 {
		return nil // inChunks reads every row for no keys
	}
	return s.inChunks(ctx, q, len(keys), term, func(i int) []any { return args(keys[i]) },
		func(rows *sql.Rows) error {
			var k K
			var spec sql.RawBytes
			if err := rows.Scan(append(dest(&k), &spec)...); err != nil {
				return err
			}
			return set(k, spec)
		})
}

// auditKey is an audit entry's primary key.
type auditKey struct {
	topic string
	part  int32
	off   int64
}

// auditSpecs sets the before and after of out, whose sizes are sizes (two
// to a row, before first) and which hold those up to inline bytes, as
// spent says: a marker for each spec left out, the stored spec for the
// others, read by key.
func (s *Store) auditSpecs(ctx context.Context, out []projector.AuditRow, sizes []specSize, inline int) error {
	side := func(i int) *json.RawMessage {
		if i%2 == 1 {
			return &out[i/2].After
		}
		return &out[i/2].Before
	}
	b := s.specBudget()
	keep := spent(b, sizes, inline, func(i int, m []byte) { *side(i) = m })
	for n, col := range []string{"before", "after"} {
		byKey := map[auditKey]int{}
		var keys []auditKey
		for _, i := range keep {
			if i%2 == n {
				e := &out[i/2].AuditEntry
				k := auditKey{e.Topic, e.Partition, e.Offset}
				byKey[k] = i
				keys = append(keys, k)
			}
		}
		q := `SELECT topic, part, off, ` + bounded(col, sizeSQL(col), b.Max()) + ` FROM audit_entries`
		err := specsByKey(ctx, s, q, `(topic = ? AND part = ? AND off = ?)`, keys,
			func(k auditKey) []any { return []any{k.topic, k.part, k.off} },
			func(k *auditKey) []any { return []any{&k.topic, &k.part, &k.off} },
			func(k auditKey, spec []byte) error {
				*side(byKey[k]) = raw(bytes.Clone(spec))
				return nil
			})
		if err != nil {
			return fmt.Errorf("%s: %w", col, err)
		}
	}
	return nil
}

// appSpecs sets the desired specs and the local ones of out, whose sizes
// are sizes (two to a row, desired first) and which hold those up to
// inline bytes, as spent says: a marker for each spec left out, the
// stored spec for the others, read by key. A row's Local holds all but a
// larger spec.
func (s *Store) appSpecs(ctx context.Context, out []projector.AppRow, sizes []specSize, inline int) error {
	side := func(i int) *json.RawMessage {
		if i%2 == 1 {
			return &out[i/2].Observed.Local.Spec
		}
		return &out[i/2].Desired.Spec
	}
	b := s.specBudget()
	keep := spent(b, sizes, inline, func(i int, m []byte) { *side(i) = m })
	tables := []struct{ table, spec, size string }{
		{"desired_apps", "spec", sizeSQL("spec")},
		{"observed_apps", localSpecSQL("local"), localSizeSQL("local")},
	}
	for n, t := range tables {
		byKey := map[projector.AppKey]int{}
		var keys []projector.AppKey
		for _, i := range keep {
			if i%2 == n {
				byKey[out[i/2].AppKey] = i
				keys = append(keys, out[i/2].AppKey)
			}
		}
		q := `SELECT cluster, namespace, name, ` + bounded(t.spec, t.size, b.Max()) + ` FROM ` + t.table
		err := specsByKey(ctx, s, q, `(cluster = ? AND namespace = ? AND name = ?)`, keys,
			func(k projector.AppKey) []any { return []any{k.Cluster, k.Namespace, k.Name} },
			func(k *projector.AppKey) []any { return []any{&k.Cluster, &k.Namespace, &k.Name} },
			func(k projector.AppKey, spec []byte) error {
				if n == 0 || len(spec) == 0 {
					*side(byKey[k]) = raw(bytes.Clone(spec))
					return nil
				}
				// PostgreSQL spaces out JSONB: compact the spec as the
				// fold wrote it, as scanObserved does.
				c := bytes.NewBuffer(make([]byte, 0, len(spec)))
				if err := json.Compact(c, spec); err != nil {
					return fmt.Errorf("local: %w", err)
				}
				*side(byKey[k]) = c.Bytes()
				return nil
			})
		if err != nil {
			return fmt.Errorf("%s: %w", t.table, err)
		}
	}
	return nil
}
