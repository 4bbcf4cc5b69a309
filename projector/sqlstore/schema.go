package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// migrations are the schema's versions: migrations[i] takes the schema
// from version i to i+1. Append; never edit one that has shipped.
//
// Every table is written by the one partition that writes its rows (see
// projector.View); times are Unix nanoseconds, UTC; $JSON and $BLOB are the
// dialect's types.
var migrations = [][]string{
	{
		`CREATE TABLE offsets (
			topic TEXT NOT NULL, part INTEGER NOT NULL, next_offset BIGINT NOT NULL,
			PRIMARY KEY (topic, part))`,
		`CREATE TABLE chain_heads (
			topic TEXT NOT NULL, part INTEGER NOT NULL, hash TEXT NOT NULL,
			PRIMARY KEY (topic, part))`,
		`CREATE TABLE registrations (
			cluster TEXT PRIMARY KEY, registered BOOLEAN NOT NULL, labels $JSON, registered_at BIGINT)`,
		`CREATE TABLE beats (
			cluster TEXT PRIMARY KEY, seq BIGINT NOT NULL, at BIGINT, agent_version TEXT NOT NULL,
			argocd_version TEXT NOT NULL, mode TEXT NOT NULL, applications BIGINT NOT NULL,
			by_sync $JSON, by_health $JSON, config_offset BIGINT NOT NULL, config_lag BIGINT NOT NULL)`,
		`CREATE TABLE desired_apps (
			cluster TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
			project TEXT NOT NULL, labels $JSON, generation BIGINT NOT NULL, deleted BOOLEAN NOT NULL,
			spec $BLOB, event_id TEXT NOT NULL, updated_at BIGINT,
			PRIMARY KEY (cluster, namespace, name))`,
		`CREATE TABLE observed_apps (
			cluster TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
			seq BIGINT NOT NULL, deleted BOOLEAN NOT NULL, sync $JSON, health $JSON, operation $JSON,
			conditions $JSON, resources $JSON, applied_generation BIGINT NOT NULL, rejected $JSON,
			updated_at BIGINT,
			PRIMARY KEY (cluster, namespace, name))`,
		`CREATE TABLE acks (
			event_id TEXT NOT NULL, cluster TEXT NOT NULL, applied BOOLEAN NOT NULL,
			code TEXT NOT NULL, reason TEXT NOT NULL, at BIGINT,
			PRIMARY KEY (event_id, cluster))`,
		`CREATE TABLE calls (
			request_id TEXT PRIMARY KEY, actor TEXT NOT NULL, action TEXT NOT NULL,
			outcome TEXT NOT NULL, at BIGINT, event_ids $JSON)`,
		// call_events maps each event id a call appended to the call, so
		// that the audit history can name the actor of a config change.
		`CREATE TABLE call_events (
			event_id TEXT NOT NULL, request_id TEXT NOT NULL,
			PRIMARY KEY (event_id, request_id))`,
		`CREATE TABLE audit_entries (
			topic TEXT NOT NULL, part INTEGER NOT NULL, off BIGINT NOT NULL, at BIGINT,
			event_id TEXT NOT NULL, type TEXT NOT NULL, cluster TEXT NOT NULL, kind TEXT NOT NULL,
			namespace TEXT NOT NULL, name TEXT NOT NULL, generation BIGINT NOT NULL, actor TEXT NOT NULL,
			before $BLOB, after $BLOB, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
			PRIMARY KEY (topic, part, off))`,
		`CREATE INDEX audit_entries_at ON audit_entries (at)`,
		`CREATE INDEX audit_entries_cluster_at ON audit_entries (cluster, at)`,
		`CREATE TABLE deployments (
			deployment_id TEXT PRIMARY KEY, event_id TEXT NOT NULL,
			cluster TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, generation BIGINT NOT NULL,
			revision TEXT NOT NULL, previous_revision TEXT NOT NULL, phase TEXT NOT NULL,
			initiator TEXT NOT NULL, started_at BIGINT, finished_at BIGINT, images $JSON,
			project TEXT NOT NULL, labels $JSON, app_uid TEXT NOT NULL, history_id BIGINT)`,
		`CREATE INDEX deployments_finished ON deployments (finished_at)`,
		`CREATE INDEX deployments_cluster_finished ON deployments (cluster, finished_at)`,
		`CREATE INDEX deployments_project_finished ON deployments (project, finished_at)`,
		`CREATE TABLE gaps (
			event_id TEXT PRIMARY KEY, cluster TEXT NOT NULL, namespace TEXT NOT NULL,
			name TEXT NOT NULL, generation BIGINT NOT NULL, app_uid TEXT NOT NULL, reason TEXT NOT NULL,
			from_history_id BIGINT NOT NULL, to_history_id BIGINT, last_recorded BIGINT,
			detail TEXT NOT NULL, at BIGINT)`,
		`CREATE INDEX gaps_cluster_at ON gaps (cluster, at)`,
	},
	{
		// What a cluster in autonomous mode published of an Application
		// it owns, for adoption.
		`ALTER TABLE observed_apps ADD COLUMN local $JSON`,
	},
	{
		// When a deployed revision was committed, for lead time.
		`ALTER TABLE deployments ADD COLUMN revision_committed_at BIGINT`,
	},
	{
		// One Application across every cluster it is on (the dashboard's
		// Application page) without reading every cluster's rows.
		`CREATE INDEX desired_apps_name ON desired_apps (name, namespace)`,
		`CREATE INDEX observed_apps_name ON observed_apps (name, namespace)`,
	},
	{
		// A sync that deployed what ran before, which reports leave out.
		`ALTER TABLE deployments ADD COLUMN unchanged BOOLEAN NOT NULL DEFAULT FALSE`,
	},
	{
		// The clusters each placement change was written to, for rollouts.
		`CREATE TABLE targets (
			event_id TEXT PRIMARY KEY, cluster TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
			placement TEXT NOT NULL, placement_generation BIGINT NOT NULL, generation BIGINT NOT NULL, at BIGINT)`,
		`CREATE INDEX targets_placement ON targets (namespace, name, at)`,
		`CREATE INDEX targets_at ON targets (at)`,
	},
	{
		// Applications turning Degraded or Healthy, for recovery time.
		`CREATE TABLE health_changes (
			event_id TEXT PRIMARY KEY, cluster TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
			health TEXT NOT NULL, at BIGINT)`,
		`CREATE INDEX health_changes_at ON health_changes (at)`,
		`CREATE INDEX health_changes_cluster_at ON health_changes (cluster, at)`,
	},
	{
		// No table changes: the audit chains are rehashed with before and
		// after in canonical form (programs[8], rechain).
	},
	{
		// Replays (docs/design.md): what the fold must refuse an event
		// about an object for, and the audit entries of those it refused.
		`CREATE TABLE object_generations (
			cluster TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
			generation BIGINT NOT NULL, deleted BOOLEAN NOT NULL, event_id TEXT NOT NULL, updated_at BIGINT,
			PRIMARY KEY (cluster, kind, namespace, name))`,
		`CREATE TABLE operations (
			request_id TEXT PRIMARY KEY, cluster TEXT NOT NULL, event_id TEXT NOT NULL,
			part INTEGER NOT NULL, off BIGINT NOT NULL, at BIGINT)`,
		`ALTER TABLE audit_entries ADD COLUMN refused TEXT NOT NULL DEFAULT ''`,
	},
	{
		// How a sync or rollback ended, as Argo CD says.
		`ALTER TABLE acks ADD COLUMN result TEXT NOT NULL DEFAULT ''`,
	},
	{
		// A cluster's config entries from an offset on, for its oldest
		// unacknowledged change (Backlogs), without reading its history.
		`CREATE INDEX audit_entries_cluster_off ON audit_entries (cluster, topic, off)`,
	},
	{
		// The audit timeline (docs/projector.md#audit-timeline): whom a
		// call acted for, the placement change it belongs to, and whether
		// it changed anything; call_events also maps each call's own
		// record to it (programs[12], callRecords, for the calls before).
		`ALTER TABLE calls ADD COLUMN via TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE calls ADD COLUMN placement TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE calls ADD COLUMN placement_generation BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE calls ADD COLUMN changed BOOLEAN NOT NULL DEFAULT FALSE`,
	},
}

// programs are the steps of a migration that SQL alone cannot take:
// programs[v] runs in the migration to version v, after its statements.
var programs = map[int]func(context.Context, *sql.Tx, dialect) error{
	8:  rechain,
	12: callRecords,
}

// migrate brings the schema up to the newest version, in one transaction.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, len(migrations)) }

// migrateTo brings the schema up to version want, in one transaction;
// tests take a store to an older version with it.
func (s *Store) migrateTo(ctx context.Context, want int) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			err = rollback(tx, err)
		}
	}()
	if s.d.lock != "" {
		if _, err := tx.ExecContext(ctx, s.d.lock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: schema_version: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("migrate: the database's schema is version %d, newer than this build's %d", have, len(migrations))
	}
	types := strings.NewReplacer("$JSON", s.d.json, "$BLOB", s.d.blob)
	for v := have; v < want; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, types.Replace(stmt)); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
		if program := programs[v+1]; program != nil {
			if err := program(ctx, tx, s.d); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.d.bind(`INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`),
			v+1, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// SchemaVersion returns the version of the database's schema.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return int(v.Int64), nil
}
