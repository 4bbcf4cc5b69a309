package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Difference is one row on which two stores disagree.
type Difference struct {
	Table string `json:"table"`
	// Key is the row's key, column by column, as text.
	Key []string `json:"key"`
	// Only is "a" or "b" for a row that only that store holds.
	Only string `json:"only,omitempty"`
	// Columns are the columns that differ, for a row both hold.
	Columns []ColumnDifference `json:"columns,omitempty"`
}

// ColumnDifference is one column's values in the two stores, as text.
type ColumnDifference struct {
	Column string `json:"column"`
	A      string `json:"a"`
	B      string `json:"b"`
}

// TableComparison is what Diff found in one table.
type TableComparison struct {
	Table       string `json:"table"`
	RowsA       int64  `json:"rowsA"`
	RowsB       int64  `json:"rowsB"`
	Differences int64  `json:"differences"`
}

// compared are the tables Diff compares: every view and the offsets, with
// their key columns first. The schema's version history is not a view.
var compared = []table{
	{name: "offsets", cols: []string{"topic", "part", "next_offset"}, keys: 2},
	chainHeadsTable, registrationsTable, beatsTable, desiredTable, observedTable, objectsTable, operationsTable,
	acksTable, callsTable, callEventsTable, auditTable, deploymentsTable, gapsTable, targetsTable, healthTable,
}

// integer key columns; every other key column is text.
var integerKeys = map[string]bool{"part": true, "off": true}

// boolean columns, which SQLite keeps as 0 and 1.
var booleanCols = map[string]bool{"registered": true, "deleted": true, "applied": true, "unchanged": true, "changed": true}

// Diff compares every table of a and b row by row, in key order, and
// calls report for each row on which they differ: one only holds, or
// whose columns differ. It returns what it found in each table. The
// stores may be of different engines: values are compared as text, JSON
// with its keys sorted and its spacing dropped, times as Unix
// nanoseconds. An error from report stops the comparison and is returned.
func Diff(ctx context.Context, a, b *Store, report func(Difference) error) ([]TableComparison, error) {
	var out []TableComparison
	for _, t := range compared {
		c, err := diffTable(ctx, t, a, b, report)
		out = append(out, c)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// diffTable merges t's rows of a and b, both in key order.
func diffTable(ctx context.Context, t table, a, b *Store, report func(Difference) error) (TableComparison, error) {
	c := TableComparison{Table: t.name}
	ra, err := a.dump(ctx, t)
	if err != nil {
		return c, fmt.Errorf("store a: %w", err)
	}
	defer ra.close()
	rb, err := b.dump(ctx, t)
	if err != nil {
		return c, fmt.Errorf("store b: %w", err)
	}
	defer rb.close()
	x, errA := ra.next()
	y, errB := rb.next()
	for errA == nil && errB == nil && (x != nil || y != nil) {
		var d *Difference
		order := compareKeys(t, x, y)
		switch {
		case order < 0:
			d = &Difference{Table: t.name, Key: x.keyText(t), Only: "a"}
		case order > 0:
			d = &Difference{Table: t.name, Key: y.keyText(t), Only: "b"}
		default:
			for i := t.keys; i < len(t.cols); i++ {
				if x.vals[i] == y.vals[i] {
					continue
				}
				if d == nil {
					d = &Difference{Table: t.name, Key: x.keyText(t)}
				}
				d.Columns = append(d.Columns, ColumnDifference{Column: t.cols[i], A: x.vals[i], B: y.vals[i]})
			}
		}
		// Move on from the smaller key, or from both when they match.
		if order <= 0 {
			c.RowsA++
			x, errA = ra.next()
		}
		if order >= 0 {
			c.RowsB++
			y, errB = rb.next()
		}
		if d != nil {
			c.Differences++
			if err := report(*d); err != nil {
				return c, err
			}
		}
	}
	if err := errors.Join(errA, errB); err != nil {
		return c, fmt.Errorf("%s: %w", t.name, err)
	}
	return c, nil
}

// dumpedRow is one row as Diff compares it: its key's values (int64 for
// integer columns, else string) for ordering, and every column as text.
type dumpedRow struct {
	key  []any
	vals []string
}

func (r *dumpedRow) keyText(t table) []string { return r.vals[:t.keys] }

// compareKeys orders two rows by key as the stores' ORDER BY does (text by
// its bytes); a nil row, a side that has run out, comes last.
func compareKeys(t table, x, y *dumpedRow) int {
	switch {
	case x == nil:
		return 1
	case y == nil:
		return -1
	}
	for i := range t.keys {
		var c int
		switch kx := x.key[i].(type) {
		case int64:
			c = cmp.Compare(kx, y.key[i].(int64))
		case string:
			c = strings.Compare(kx, y.key[i].(string))
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// dumpRows reads one table's rows in key order.
type dumpRows struct {
	t    table
	rows *sql.Rows
	dest []any
}

// dump reads every row of t in key order. PostgreSQL orders text keys by
// their bytes (COLLATE "C"), as SQLite does.
func (s *Store) dump(ctx context.Context, t table) (*dumpRows, error) {
	order := make([]string, t.keys)
	for i, col := range t.cols[:t.keys] {
		order[i] = col
		if !integerKeys[col] && s.d.numbered {
			order[i] += ` COLLATE "C"`
		}
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+strings.Join(t.cols, ", ")+" FROM "+t.name+" ORDER BY "+strings.Join(order, ", "))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.name, err)
	}
	d := &dumpRows{t: t, rows: rows, dest: make([]any, len(t.cols))}
	for i := range d.dest {
		d.dest[i] = new(any)
	}
	return d, nil
}

// next returns the next row, or nil after the last.
func (d *dumpRows) next() (*dumpedRow, error) {
	if !d.rows.Next() {
		return nil, d.rows.Err()
	}
	if err := d.rows.Scan(d.dest...); err != nil {
		return nil, err
	}
	r := &dumpedRow{key: make([]any, d.t.keys), vals: make([]string, len(d.t.cols))}
	for i, col := range d.t.cols {
		v := *(d.dest[i].(*any))
		text, err := valueText(col, v)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", d.t.name, col, err)
		}
		r.vals[i] = text
		if i < d.t.keys {
			if integerKeys[col] {
				n, err := strconv.ParseInt(text, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: key %q: %w", d.t.name, col, text, err)
				}
				r.key[i] = n
			} else {
				r.key[i] = text
			}
		}
	}
	return r, nil
}

func (d *dumpRows) close() { d.rows.Close() }

// valueText is a column's value as Diff compares it: NULL, a number,
// true or false, JSON with sorted keys and no spacing, or the text.
func valueText(col string, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		if booleanCols[col] {
			return strconv.FormatBool(x != 0), nil
		}
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		return jsonOrText([]byte(x))
	case []byte:
		return jsonOrText(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", err
		}
		return jsonOrText(b)
	}
}

// jsonOrText canonicalizes b if it is a JSON object or array.
func jsonOrText(b []byte) (string, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return string(b), nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(b), nil //nolint:nilerr // not JSON after all: compared as text
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}
