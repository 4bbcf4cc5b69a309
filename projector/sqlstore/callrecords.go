package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
)

// callRecordsPage is how many rows callRecords reads at a time.
const callRecordsPage = 1000

// callRecords brings the calls folded before schema version 12 to what
// the fold writes now: each call's own audit record maps to the call in
// call_events, and a call that appended events is marked changed. A store
// folded before knows no call's via or placement; a rebuild does.
func callRecords(ctx context.Context, tx *sql.Tx, d dialect) error {
	insert := d.bind(`INSERT INTO call_events (event_id, request_id) VALUES (?, ?) ON CONFLICT (event_id, request_id) DO NOTHING`)
	page := d.bind(`SELECT topic, part, off, event_id, after FROM audit_entries WHERE kind = 'api'
		AND (topic > ? OR (topic = ? AND (part > ? OR (part = ? AND off > ?)))) ORDER BY topic, part, off LIMIT ` +
		strconv.Itoa(callRecordsPage))
	topic, part, off := "", int32(-1), int64(-1)
	for {
		var pairs [][2]string
		n := 0
		err := eachRow(ctx, tx, page, []any{topic, topic, part, part, off}, func(rows *sql.Rows) error {
			var id string
			var after []byte
			if err := rows.Scan(&topic, &part, &off, &id, &after); err != nil {
				return err
			}
			n++
			var rec struct {
				RequestID string `json:"requestId"`
			}
			if json.Unmarshal(after, &rec) == nil && rec.RequestID != "" {
				pairs = append(pairs, [2]string{id, rec.RequestID})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("call records: %w", err)
		}
		for _, p := range pairs {
			if _, err := tx.ExecContext(ctx, insert, p[0], p[1]); err != nil {
				return fmt.Errorf("call records: %w", err)
			}
		}
		if n < callRecordsPage {
			break
		}
	}
	return markChanged(ctx, tx, d)
}

// markChanged marks changed every call whose record names events.
func markChanged(ctx context.Context, tx *sql.Tx, d dialect) error {
	var changed []string
	err := eachRow(ctx, tx, `SELECT request_id, event_ids FROM calls`, nil, func(rows *sql.Rows) error {
		var id string
		var ids []byte
		if err := rows.Scan(&id, &ids); err != nil {
			return err
		}
		var events []string
		if json.Unmarshal(ids, &events) == nil && len(events) > 0 {
			changed = append(changed, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("calls changed: %w", err)
	}
	update := d.bind(`UPDATE calls SET changed = TRUE WHERE request_id = ?`)
	for _, id := range changed {
		if _, err := tx.ExecContext(ctx, update, id); err != nil {
			return fmt.Errorf("calls changed: %w", err)
		}
	}
	return nil
}
