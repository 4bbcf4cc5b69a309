package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/argosyproj/argosy/projector"
)

// Backlogs returns every registered cluster that is not deregistered, by
// name, with the log time of its oldest config event on configTopic that
// no acknowledgement answers, and its last heartbeat's time. One query
// for the whole fleet, which reads per cluster only the entries from the
// config offset its agent last reported it had read to
// (audit_entries_cluster_off): below it the agent has handled every
// event, so a rebuilt view whose acknowledgements aged out of the status
// topic does not count them as pending. A replay the fold refused never
// gets an acknowledgement the fold keeps, so it is left out.
func (s *Store) Backlogs(ctx context.Context, configTopic string) ([]projector.ClusterBacklog, error) {
	q := `SELECT r.cluster, b.at, (
			SELECT MIN(e.at) FROM audit_entries e
			WHERE e.cluster = r.cluster AND e.topic = ? AND e.off >= COALESCE(b.config_offset, 0) AND e.refused = ''
			AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.event_id = e.event_id AND a.cluster = e.cluster))
		FROM registrations r
		LEFT JOIN beats b ON b.cluster = r.cluster
		WHERE r.registered
		ORDER BY r.cluster`
	var out []projector.ClusterBacklog
	err := s.read(ctx, s.d.noJIT, func(db querier) error {
		return eachRow(ctx, db, s.d.bind(q), []any{configTopic}, func(rows *sql.Rows) error {
			var c projector.ClusterBacklog
			var beat, oldest sql.NullInt64
			if err := rows.Scan(&c.Cluster, &beat, &oldest); err != nil {
				return err
			}
			c.HeartbeatAt, c.OldestUnapplied = fromNanos(beat), fromNanos(oldest)
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cluster backlogs: %w", err)
	}
	return out, nil
}

// read runs f on the read pool, or, with setup, in a read-only transaction
// that setup's statement starts.
func (s *Store) read(ctx context.Context, setup string, f func(querier) error) error {
	if setup == "" {
		return f(s.r)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, setup); err != nil {
		return rollback(tx, err)
	}
	if err := f(tx); err != nil {
		return rollback(tx, err)
	}
	return tx.Commit()
}
