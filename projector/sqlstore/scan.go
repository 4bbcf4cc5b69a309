package sqlstore

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// Each table has its column list, in the order its row function (write.go)
// gives the values and its scan function reads them. A scan function
// returns the destinations for Scan and a build function that makes the
// value after Scan; build returns nil when the row's key is NULL (a LEFT
// JOIN that found nothing), so one scan serves plain and joined queries.

var (
	registrationColumns = []string{"cluster", "registered", "labels", "registered_at"}
	beatColumns         = []string{"cluster", "seq", "at", "agent_version", "argocd_version", "mode", "applications",
		"by_sync", "by_health", "config_offset", "config_lag"}
	desiredColumns = []string{"cluster", "namespace", "name", "project", "labels", "generation", "deleted", "spec",
		"event_id", "updated_at"}
	observedColumns = []string{"cluster", "namespace", "name", "seq", "deleted", "sync", "health", "operation",
		"conditions", "resources", "applied_generation", "rejected", "updated_at", "local"}
	objectColumns    = []string{"cluster", "kind", "namespace", "name", "generation", "deleted", "event_id", "updated_at"}
	operationColumns = []string{"request_id", "cluster", "event_id", "part", "off", "at"}
	ackColumns       = []string{"event_id", "cluster", "applied", "code", "reason", "at", "result"}
	callColumns      = []string{"request_id", "actor", "action", "outcome", "at", "event_ids", "via", "placement",
		"placement_generation", "changed"}
	// auditColumnsV8 are the audit entries' columns up to schema version
	// 8, which its rehash reads (rechain); never change them.
	auditColumnsV8 = []string{"topic", "part", "off", "at", "event_id", "type", "cluster", "kind", "namespace", "name",
		"generation", "actor", "before", "after", "prev_hash", "hash"}
	auditColumns      = append(slices.Clip(auditColumnsV8), "refused")
	deploymentColumns = []string{"deployment_id", "event_id", "cluster", "namespace", "name", "generation", "revision",
		"previous_revision", "phase", "initiator", "started_at", "finished_at", "images", "project", "labels",
		"app_uid", "history_id", "revision_committed_at", "unchanged"}
	gapColumns = []string{"event_id", "cluster", "namespace", "name", "generation", "app_uid", "reason",
		"from_history_id", "to_history_id", "last_recorded", "detail", "at"}
	targetColumns = []string{"event_id", "cluster", "namespace", "name", "placement", "placement_generation",
		"generation", "at"}
	healthColumns = []string{"event_id", "cluster", "namespace", "name", "health", "at"}
)

// columns returns cols as a select list, each qualified by alias if any.
func columns(alias string, cols []string) string {
	if alias == "" {
		return strings.Join(cols, ", ")
	}
	return alias + "." + strings.Join(cols, ", "+alias+".")
}

func registrationCols(alias string) string { return columns(alias, registrationColumns) }
func beatCols(alias string) string         { return columns(alias, beatColumns) }
func desiredCols(alias string) string      { return columns(alias, desiredColumns) }
func observedCols(alias string) string     { return columns(alias, observedColumns) }
func objectCols(alias string) string       { return columns(alias, objectColumns) }
func operationCols(alias string) string    { return columns(alias, operationColumns) }

// minTime and maxTime bound the times a store holds: Unix nanoseconds fit
// an int64 between them.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos is t's column value: Unix nanoseconds, or NULL for the zero time.
func nanos(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return nil, fmt.Errorf("time %s is out of range (years 1678 to 2262)", t.Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}

// fromNanos is nanos' inverse, in UTC.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// jsonText is v encoded as a JSON column, NULL for a nil map, slice or
// pointer.
func jsonText(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return string(b), nil
}

// fromJSON decodes a JSON column into v; NULL leaves v alone.
func fromJSON(b []byte, v any, col string) error {
	if b == nil {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("column %s: %w", col, err)
	}
	return nil
}

// blob is raw bytes' column value, NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// raw is blob's inverse.
func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func ptrInt64(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

func nullInt64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// decoder collects JSON columns' decoding errors, so that build functions
// read as lists of fields.
type decoder struct{ err error }

func (d *decoder) json(b []byte, v any, col string) {
	if d.err == nil {
		d.err = fromJSON(b, v, col)
	}
}

func scanRegistration() ([]any, func() (*projector.ClusterRegistration, error)) {
	var cluster sql.NullString
	var registered sql.NullBool
	var labels []byte
	var at sql.NullInt64
	return []any{&cluster, &registered, &labels, &at}, func() (*projector.ClusterRegistration, error) {
		if !cluster.Valid {
			return nil, nil
		}
		v := &projector.ClusterRegistration{Cluster: cluster.String, Registered: registered.Bool, RegisteredAt: fromNanos(at)}
		return v, fromJSON(labels, &v.Labels, "labels")
	}
}

func scanBeat() ([]any, func() (*projector.ClusterBeat, error)) {
	var cluster, agent, argocd, mode sql.NullString
	var seq, at, apps, cfgOffset, cfgLag sql.NullInt64
	var bySync, byHealth []byte
	dest := []any{&cluster, &seq, &at, &agent, &argocd, &mode, &apps, &bySync, &byHealth, &cfgOffset, &cfgLag}
	return dest, func() (*projector.ClusterBeat, error) {
		if !cluster.Valid {
			return nil, nil
		}
		v := &projector.ClusterBeat{Cluster: cluster.String, Seq: seq.Int64, At: fromNanos(at), AgentVersion: agent.String,
			ArgoCDVersion: argocd.String, Mode: mode.String, Applications: int(apps.Int64),
			ConfigOffset: cfgOffset.Int64, ConfigLag: cfgLag.Int64}
		var d decoder
		d.json(bySync, &v.BySync, "by_sync")
		d.json(byHealth, &v.ByHealth, "by_health")
		return v, d.err
	}
}

func scanDesired() ([]any, func() (*projector.AppDesired, error)) {
	var cluster, ns, name, project, eventID sql.NullString
	var labels, spec []byte
	var gen, at sql.NullInt64
	var deleted sql.NullBool
	dest := []any{&cluster, &ns, &name, &project, &labels, &gen, &deleted, &spec, &eventID, &at}
	return dest, func() (*projector.AppDesired, error) {
		if !cluster.Valid {
			return nil, nil
		}
		v := &projector.AppDesired{AppKey: projector.AppKey{Cluster: cluster.String, Namespace: ns.String, Name: name.String},
			Project: project.String, Generation: gen.Int64, Deleted: deleted.Bool, Spec: raw(spec),
			EventID: eventID.String, UpdatedAt: fromNanos(at)}
		return v, fromJSON(labels, &v.Labels, "labels")
	}
}

func scanObserved() ([]any, func() (*projector.AppObserved, error)) {
	var cluster, ns, name sql.NullString
	var seq, applied, at sql.NullInt64
	var deleted sql.NullBool
	var syncJ, health, op, conds, res, rejected, local []byte
	dest := []any{&cluster, &ns, &name, &seq, &deleted, &syncJ, &health, &op, &conds, &res, &applied, &rejected, &at, &local}
	return dest, func() (*projector.AppObserved, error) {
		if !cluster.Valid {
			return nil, nil
		}
		v := &projector.AppObserved{AppKey: projector.AppKey{Cluster: cluster.String, Namespace: ns.String, Name: name.String},
			Seq: seq.Int64, Deleted: deleted.Bool, AppliedGeneration: applied.Int64, UpdatedAt: fromNanos(at)}
		var d decoder
		d.json(syncJ, &v.Sync, "sync")
		d.json(health, &v.Health, "health")
		d.json(op, &v.Operation, "operation")
		d.json(conds, &v.Conditions, "conditions")
		d.json(res, &v.Resources, "resources")
		d.json(rejected, &v.Rejected, "rejected")
		d.json(local, &v.Local, "local")
		if v.Local != nil && len(v.Local.Spec) > 0 && d.err == nil {
			// A JSON column keeps the value, not its bytes (PostgreSQL's
			// jsonb spaces it out): compact the spec as the fold wrote it.
			var b bytes.Buffer
			if err := json.Compact(&b, v.Local.Spec); err != nil {
				return nil, fmt.Errorf("local: %w", err)
			}
			v.Local.Spec = b.Bytes()
		}
		return v, d.err
	}
}

func scanAck(rows *sql.Rows) (projector.Ack, error) {
	var a projector.Ack
	var at sql.NullInt64
	if err := rows.Scan(&a.EventID, &a.Cluster, &a.Applied, &a.Code, &a.Reason, &at, &a.Result); err != nil {
		return a, err
	}
	a.At = fromNanos(at)
	return a, nil
}

func scanObject() ([]any, func() (*projector.ObjectGeneration, error)) {
	var cluster, kind, ns, name, eventID sql.NullString
	var gen, at sql.NullInt64
	var deleted sql.NullBool
	return []any{&cluster, &kind, &ns, &name, &gen, &deleted, &eventID, &at}, func() (*projector.ObjectGeneration, error) {
		if !cluster.Valid {
			return nil, nil
		}
		return &projector.ObjectGeneration{ObjectKey: projector.ObjectKey{Cluster: cluster.String, Kind: kind.String, Namespace: ns.String,
			Name: name.String}, Generation: gen.Int64, Deleted: deleted.Bool, EventID: eventID.String, UpdatedAt: fromNanos(at)}, nil
	}
}

func scanOperation() ([]any, func() (*projector.Operation, error)) {
	var id, cluster, eventID sql.NullString
	var part, off, at sql.NullInt64
	return []any{&id, &cluster, &eventID, &part, &off, &at}, func() (*projector.Operation, error) {
		if !id.Valid {
			return nil, nil
		}
		return &projector.Operation{RequestID: id.String, Cluster: cluster.String, EventID: eventID.String,
			Partition: int32(part.Int64), Offset: off.Int64, At: fromNanos(at)}, nil
	}
}

// scanAudit scans auditColumns.
func scanAudit() ([]any, func() projector.AuditEntry) {
	dest, build := scanAuditV8()
	var refused string
	return append(dest, &refused), func() projector.AuditEntry {
		e := build()
		e.Refused = refused
		return e
	}
}

// scanAuditV8 scans auditColumnsV8.
func scanAuditV8() ([]any, func() projector.AuditEntry) {
	var e projector.AuditEntry
	var at sql.NullInt64
	var before, after []byte
	dest := []any{&e.Topic, &e.Partition, &e.Offset, &at, &e.EventID, &e.Type, &e.Cluster, &e.Kind, &e.Namespace,
		&e.Name, &e.Generation, &e.Actor, &before, &after, &e.PrevHash, &e.Hash}
	return dest, func() projector.AuditEntry {
		e.At, e.Before, e.After = fromNanos(at), raw(before), raw(after)
		return e
	}
}

func scanDeployment(rows *sql.Rows) (projector.Deployment, error) {
	var v projector.Deployment
	var started, finished, history, committed sql.NullInt64
	var images, labels []byte
	err := rows.Scan(&v.DeploymentID, &v.EventID, &v.Cluster, &v.Namespace, &v.Name, &v.Generation, &v.Revision,
		&v.PreviousRevision, &v.Phase, &v.Initiator, &started, &finished, &images, &v.Project, &labels,
		&v.AppUID, &history, &committed, &v.Unchanged)
	if err != nil {
		return v, err
	}
	v.StartedAt, v.FinishedAt, v.HistoryID = fromNanos(started), fromNanos(finished), ptrInt64(history)
	if committed.Valid {
		at := fromNanos(committed)
		v.RevisionCommittedAt = &at
	}
	var d decoder
	d.json(images, &v.Images, "images")
	d.json(labels, &v.Labels, "labels")
	return v, d.err
}

func scanGap(rows *sql.Rows) (projector.Gap, error) {
	var v projector.Gap
	var to, last, at sql.NullInt64
	err := rows.Scan(&v.EventID, &v.Cluster, &v.Namespace, &v.Name, &v.Generation, &v.AppUID, &v.Reason,
		&v.FromHistoryID, &to, &last, &v.Detail, &at)
	if err != nil {
		return v, err
	}
	v.ToHistoryID, v.LastRecorded, v.At = ptrInt64(to), ptrInt64(last), fromNanos(at)
	return v, nil
}

func scanTarget(rows *sql.Rows) (projector.Target, error) {
	var v projector.Target
	var at sql.NullInt64
	err := rows.Scan(&v.EventID, &v.Cluster, &v.Namespace, &v.Name, &v.Placement, &v.PlacementGeneration,
		&v.Generation, &at)
	v.At = fromNanos(at)
	return v, err
}

func scanHealth(rows *sql.Rows) (projector.HealthChange, error) {
	var v projector.HealthChange
	var at sql.NullInt64
	err := rows.Scan(&v.EventID, &v.Cluster, &v.Namespace, &v.Name, &v.Health, &at)
	v.At = fromNanos(at)
	return v, err
}
