package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// rechainPage is how many entries the rehash reads at a time.
const rechainPage = 1000

// rechain takes the audit chains from the hash of schema version 7 and
// before (chainV1: before and after hashed as the bytes stored) to
// projector.Chain's (their canonical form), in the migration's
// transaction. Each partition is rehashed from its first entry, each entry
// checked against the old hash first. At the first entry that does not
// hold, or that has no canonical form, the partition is left as it was
// from there on, so a check still finds the chain broken at that entry
// rather than a chain hashed over the break. A partition's head moves to
// the new hash only when the whole partition was rehashed and the head was
// its last entry's.
func rechain(ctx context.Context, tx *sql.Tx, d dialect) error {
	var ps []projector.Partition
	err := eachRow(ctx, tx, `SELECT DISTINCT topic, part FROM audit_entries ORDER BY topic, part`, nil, func(rows *sql.Rows) error {
		var p projector.Partition
		if err := rows.Scan(&p.Topic, &p.Partition); err != nil {
			return err
		}
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("rechain: partitions: %w", err)
	}
	for _, p := range ps {
		if err := rechainPartition(ctx, tx, d, p); err != nil {
			return fmt.Errorf("rechain %s/%d: %w", p.Topic, p.Partition, err)
		}
	}
	return nil
}

// relink is one partition's walk: the last entry's hash under each
// definition, and whether every entry so far held.
type relink struct {
	oldPrev, newPrev string
	holds            bool
}

func rechainPartition(ctx context.Context, tx *sql.Tx, d dialect, p projector.Partition) error {
	w := relink{holds: true}
	update := d.bind(`UPDATE audit_entries SET prev_hash = ?, hash = ? WHERE topic = ? AND part = ? AND off = ?`)
	for after := int64(-1); w.holds; {
		page, err := chainPage(ctx, tx, d, p, after)
		if err != nil {
			return err
		}
		for _, e := range page {
			newHash, ok := w.next(e)
			if !ok {
				break
			}
			if _, err := tx.ExecContext(ctx, update, e.PrevHash, newHash, p.Topic, p.Partition, e.Offset); err != nil {
				return fmt.Errorf("offset %d: %w", e.Offset, err)
			}
		}
		if len(page) < rechainPage {
			break
		}
		after = page[len(page)-1].Offset
	}
	if !w.holds || w.newPrev == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, d.bind(`UPDATE chain_heads SET hash = ? WHERE topic = ? AND part = ? AND hash = ?`),
		w.newPrev, p.Topic, p.Partition, w.oldPrev)
	return err
}

// next checks e against the old chain and returns its new hash, setting
// e.PrevHash to the new previous hash; false once the old chain breaks or
// e has no canonical form.
func (w *relink) next(e *projector.AuditEntry) (string, bool) {
	if !w.holds || e.PrevHash != w.oldPrev || chainV1(w.oldPrev, *e) != e.Hash {
		w.holds = false
		return "", false
	}
	e.PrevHash = w.newPrev
	h, err := projector.Chain(w.newPrev, *e)
	if err != nil {
		w.holds = false
		return "", false
	}
	w.oldPrev, w.newPrev = e.Hash, h
	return h, true
}

// chainPage reads the entries of p after offset after, in offset order,
// all of them before any is updated: a driver may not run a statement on
// a transaction's connection while rows are open on it.
func chainPage(ctx context.Context, tx *sql.Tx, d dialect, p projector.Partition, after int64) ([]*projector.AuditEntry, error) {
	q := d.bind(`SELECT ` + columns("", auditColumnsV8) + ` FROM audit_entries WHERE topic = ? AND part = ? AND off > ? ORDER BY off LIMIT ` +
		strconv.Itoa(rechainPage))
	var out []*projector.AuditEntry
	err := eachRow(ctx, tx, q, []any{p.Topic, p.Partition, after}, func(rows *sql.Rows) error {
		dest, build := scanAuditV8()
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		e := build()
		out = append(out, &e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading after offset %d: %w", after, err)
	}
	return out, nil
}

// chainV1 is the audit chain's hash up to schema version 7, kept to check
// old chains before they are rehashed; never change it. It is
// projector.Chain but for before and after, hashed as the bytes stored.
func chainV1(prevHash string, e projector.AuditEntry) string {
	h := sha256.New()
	for _, v := range []string{
		prevHash, e.Topic, strconv.FormatInt(int64(e.Partition), 10), strconv.FormatInt(e.Offset, 10),
		e.At.UTC().Format(time.RFC3339Nano), e.EventID, e.Type, e.Cluster, e.Kind, e.Namespace, e.Name,
		strconv.FormatInt(e.Generation, 10), e.Actor, string(e.Before), string(e.After),
	} {
		h.Write([]byte(strconv.Itoa(len(v))))
		h.Write([]byte{':'})
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
