package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/argosyproj/argosy/projector"
)

// ErrStaleOffset is the error of a Commit whose step did not begin where a
// partition's stored offset is now, or whose offset would move a stored
// one back: another replica has folded the partition since this one read
// it, so this one no longer owns it. Nothing of the batch was written. The
// caller drops its working set and reads its partitions' offsets again.
var ErrStaleOffset = errors.New("stale offset: the partition was committed by another replica")

// Commit writes the batch and its offsets in one transaction. It fails with
// ErrStaleOffset, writing nothing, if a partition in the batch's From has
// another stored offset (a compare-and-set on where the step began), or if
// a stored offset is beyond the batch's offset for the same partition.
func (s *Store) Commit(ctx context.Context, b *projector.Batch) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("commit: begin: %w", err)
	}
	defer func() {
		if err != nil {
			err = rollback(tx, err)
		}
	}()
	if err := s.fence(ctx, tx, b.Offsets, b.From); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := s.writeRows(ctx, tx, b); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// fence writes the offsets, partitions in order: for a partition in from,
// only if its stored offset is still from's (none stored counts as 0);
// for any other, unless it would move back.
func (s *Store) fence(ctx context.Context, tx *sql.Tx, offsets, from map[projector.Partition]int64) error {
	forward := s.d.bind(`INSERT INTO offsets (topic, part, next_offset) VALUES (?, ?, ?)
		ON CONFLICT (topic, part) DO UPDATE SET next_offset = excluded.next_offset
		WHERE offsets.next_offset <= excluded.next_offset`)
	swap := s.d.bind(`UPDATE offsets SET next_offset = ? WHERE topic = ? AND part = ? AND next_offset = ?`)
	first := s.d.bind(`INSERT INTO offsets (topic, part, next_offset) VALUES (?, ?, ?) ON CONFLICT (topic, part) DO NOTHING`)
	for _, p := range slices.SortedFunc(maps.Keys(offsets), comparePartitions) {
		at, cas := from[p]
		var n int64
		var err error
		switch {
		case !cas:
			n, err = exec(ctx, tx, forward, p.Topic, p.Partition, offsets[p])
		default:
			n, err = exec(ctx, tx, swap, offsets[p], p.Topic, p.Partition, at)
			if err == nil && n == 0 && at == 0 {
				n, err = exec(ctx, tx, first, p.Topic, p.Partition, offsets[p])
			}
		}
		if err != nil {
			return fmt.Errorf("offset of %s/%d: %w", p.Topic, p.Partition, err)
		}
		if n == 1 {
			continue
		}
		var stored int64
		if err := tx.QueryRowContext(ctx, s.d.bind(`SELECT next_offset FROM offsets WHERE topic = ? AND part = ?`),
			p.Topic, p.Partition).Scan(&stored); err != nil {
			return fmt.Errorf("offset of %s/%d: %w", p.Topic, p.Partition, err)
		}
		if cas {
			return fmt.Errorf("%s/%d: the step began at %d, the store is at %d: %w", p.Topic, p.Partition, at, stored, ErrStaleOffset)
		}
		return fmt.Errorf("%s/%d: batch ends at %d, store is at %d: %w", p.Topic, p.Partition, offsets[p], stored, ErrStaleOffset)
	}
	return nil
}

// exec runs q and returns the rows it affected.
func exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func comparePartitions(a, b projector.Partition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Offsets returns the stored next offset of each of ps that has one, or of
// every partition if ps is empty.
func (s *Store) Offsets(ctx context.Context, ps []projector.Partition) (map[projector.Partition]int64, error) {
	out := map[projector.Partition]int64{}
	q := `SELECT topic, part, next_offset FROM offsets`
	err := s.inChunks(ctx, q, len(ps), `(topic = ? AND part = ?)`, func(i int) []any {
		return []any{ps[i].Topic, ps[i].Partition}
	}, func(rows *sql.Rows) error {
		var p projector.Partition
		var off int64
		if err := rows.Scan(&p.Topic, &p.Partition, &off); err != nil {
			return err
		}
		out[p] = off
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	return out, nil
}

// keysPerQuery bounds the keys one SELECT asks for.
const keysPerQuery = 256

// inChunks runs q for n keys, keysPerQuery at a time, with a WHERE clause
// that ORs term (one key's condition) for each: args(i) are the i-th key's
// arguments. A chunk asks for a power of two of keys, the last one
// repeated as need be, so that few distinct statements are prepared. With
// n == 0 it runs q once with no WHERE clause at all.
func (s *Store) inChunks(ctx context.Context, q string, n int, term string, args func(i int) []any, scan func(*sql.Rows) error) error {
	if n == 0 {
		return s.each(ctx, q, nil, scan)
	}
	for lo := 0; lo < n; lo += keysPerQuery {
		hi := min(n, lo+keysPerQuery)
		size := 1
		for size < hi-lo {
			size *= 2
		}
		terms := make([]string, 0, size)
		var a []any
		for i := range size {
			terms = append(terms, term)
			a = append(a, args(min(lo+i, hi-1))...)
		}
		if err := s.each(ctx, q+" WHERE "+strings.Join(terms, " OR "), a, scan); err != nil {
			return err
		}
	}
	return nil
}

// each runs query q (with '?' placeholders) on the readers, through its
// prepared statement, and calls scan for every row.
func (s *Store) each(ctx context.Context, q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.stmts.query(ctx, s.r, s.d.bind(q), args)
	if err != nil {
		return err
	}
	return scanAll(rows, scan)
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// eachRow runs query q on db and calls scan for every row.
func eachRow(ctx context.Context, db querier, q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	return scanAll(rows, scan)
}

// scanAll calls scan for every row of rows, and closes them.
func scanAll(rows *sql.Rows, scan func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Load returns the rows of need that the store holds; keys it does not hold
// are absent from the maps.
func (s *Store) Load(ctx context.Context, need *projector.Need) (*projector.Rows, error) {
	if need == nil {
		need = &projector.Need{}
	}
	r := &projector.Rows{
		Registrations: map[string]projector.ClusterRegistration{}, Beats: map[string]projector.ClusterBeat{},
		Desired: map[projector.AppKey]projector.AppDesired{}, Observed: map[projector.AppKey]projector.AppObserved{},
		Objects: map[projector.ObjectKey]projector.ObjectGeneration{}, Operations: map[string]projector.Operation{},
		ChainHeads: map[projector.Partition]string{},
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"registrations", func() error { return loadRows(ctx, s, &registrationRows, need.Registrations, r.Registrations) }},
		{"heartbeats", func() error { return loadRows(ctx, s, &beatRows, need.Beats, r.Beats) }},
		{"desired applications", func() error { return loadRows(ctx, s, &desiredRows, need.Desired, r.Desired) }},
		{"observed applications", func() error { return loadRows(ctx, s, &observedRows, need.Observed, r.Observed) }},
		{"object generations", func() error { return loadRows(ctx, s, &objectRows, need.Objects, r.Objects) }},
		{"operations", func() error { return loadRows(ctx, s, &operationRows, need.Operations, r.Operations) }},
		{"chain heads", func() error { return s.loadChainHeads(ctx, need.ChainHeads, r.ChainHeads) }},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			return nil, fmt.Errorf("load %s: %w", st.what, err)
		}
	}
	return r, nil
}

// keyed is a view table whose rows Load reads by key: its query (the
// table's columns, no WHERE clause), the condition that matches one key
// and that key's arguments, its scan function and the key of a row. The
// tables are package values, so that a Load with no keys to read, the
// common case once a working set is warm, builds no query.
type keyed[K comparable, V any] struct {
	query string
	term  string
	args  func(K) []any
	scan  func() ([]any, func() (*V, error))
	key   func(*V) K
}

const appKeyTerm = `(cluster = ? AND namespace = ? AND name = ?)`

func clusterArgs(c string) []any          { return []any{c} }
func appKeyArgs(k projector.AppKey) []any { return []any{k.Cluster, k.Namespace, k.Name} }
func objectKeyArgs(k projector.ObjectKey) []any {
	return []any{k.Cluster, k.Kind, k.Namespace, k.Name}
}

var (
	registrationRows = keyed[string, projector.ClusterRegistration]{
		query: `SELECT ` + registrationCols("") + ` FROM registrations`, term: `cluster = ?`, args: clusterArgs,
		scan: scanRegistration, key: func(v *projector.ClusterRegistration) string { return v.Cluster },
	}
	beatRows = keyed[string, projector.ClusterBeat]{
		query: `SELECT ` + beatCols("") + ` FROM beats`, term: `cluster = ?`, args: clusterArgs,
		scan: scanBeat, key: func(v *projector.ClusterBeat) string { return v.Cluster },
	}
	desiredRows = keyed[projector.AppKey, projector.AppDesired]{
		query: `SELECT ` + desiredCols("") + ` FROM desired_apps`, term: appKeyTerm, args: appKeyArgs,
		scan: scanDesired, key: func(v *projector.AppDesired) projector.AppKey { return v.AppKey },
	}
	observedRows = keyed[projector.AppKey, projector.AppObserved]{
		query: `SELECT ` + observedCols("") + ` FROM observed_apps`, term: appKeyTerm, args: appKeyArgs,
		scan: scanObserved, key: func(v *projector.AppObserved) projector.AppKey { return v.AppKey },
	}
	objectRows = keyed[projector.ObjectKey, projector.ObjectGeneration]{
		query: `SELECT ` + objectCols("") + ` FROM object_generations`,
		term:  `(cluster = ? AND kind = ? AND namespace = ? AND name = ?)`, args: objectKeyArgs,
		scan: scanObject, key: func(v *projector.ObjectGeneration) projector.ObjectKey { return v.ObjectKey },
	}
	operationRows = keyed[string, projector.Operation]{
		query: `SELECT ` + operationCols("") + ` FROM operations`, term: `request_id = ?`,
		args: func(id string) []any { return []any{id} },
		scan: scanOperation, key: func(v *projector.Operation) string { return v.RequestID },
	}
)

// loadRows reads t's rows of keys and stores each row found under its key.
func loadRows[K comparable, V any](ctx context.Context, s *Store, t *keyed[K, V], keys []K, out map[K]V) error {
	if len(keys) == 0 {
		return nil
	}
	return s.inChunks(ctx, t.query, len(keys), t.term, func(i int) []any { return t.args(keys[i]) },
		func(rows *sql.Rows) error {
			dest, build := t.scan()
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			v, err := build()
			if err != nil || v == nil {
				return err
			}
			out[t.key(v)] = *v
			return nil
		})
}

func (s *Store) loadChainHeads(ctx context.Context, keys []projector.Partition, out map[projector.Partition]string) error {
	if len(keys) == 0 {
		return nil
	}
	return s.inChunks(ctx, `SELECT topic, part, hash FROM chain_heads`, len(keys), `(topic = ? AND part = ?)`,
		func(i int) []any { return []any{keys[i].Topic, keys[i].Partition} },
		func(rows *sql.Rows) error {
			var p projector.Partition
			var h string
			if err := rows.Scan(&p.Topic, &p.Partition, &h); err != nil {
				return err
			}
			out[p] = h
			return nil
		})
}
