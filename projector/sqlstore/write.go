package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// table is how Commit writes one table: an INSERT of many rows at once,
// ON CONFLICT on the key (the first keys columns) either updating the other
// columns or, for tables that must never be rewritten, doing nothing.
type table struct {
	name string
	cols []string
	keys int
	keep bool // ON CONFLICT DO NOTHING: the first row written stays
}

var (
	registrationsTable = table{name: "registrations", cols: registrationColumns, keys: 1}
	beatsTable         = table{name: "beats", cols: beatColumns, keys: 1}
	desiredTable       = table{name: "desired_apps", cols: desiredColumns, keys: 3}
	observedTable      = table{name: "observed_apps", cols: observedColumns, keys: 3}
	objectsTable       = table{name: "object_generations", cols: objectColumns, keys: 4}
	operationsTable    = table{name: "operations", cols: operationColumns, keys: 1}
	chainHeadsTable    = table{name: "chain_heads", cols: []string{"topic", "part", "hash"}, keys: 2}
	acksTable          = table{name: "acks", cols: ackColumns, keys: 2}
	callsTable         = table{name: "calls", cols: callColumns, keys: 1}
	callEventsTable    = table{name: "call_events", cols: []string{"event_id", "request_id"}, keys: 2, keep: true}
	// The audit chain is append-only: an entry once written is never
	// rewritten, so a tampered row stays tampered for Verify to find.
	auditTable       = table{name: "audit_entries", cols: auditColumns, keys: 3, keep: true}
	deploymentsTable = table{name: "deployments", cols: deploymentColumns, keys: 1}
	targetsTable     = table{name: "targets", cols: targetColumns, keys: 1}
	// Gaps and health changes carry the log time of the record that
	// made them: a status record appended again (anyone with produce
	// access may) must not move them to its own time.
	gapsTable   = table{name: "gaps", cols: gapColumns, keys: 1, keep: true}
	healthTable = table{name: "health_changes", cols: healthColumns, keys: 1, keep: true}
)

// maxRows bounds the rows of one INSERT; the dialect bounds its
// parameters.
const maxRows = 1000

// writeRows writes every row of b.
func (s *Store) writeRows(ctx context.Context, tx *sql.Tx, b *projector.Batch) error {
	steps := []struct {
		t    table
		rows func() ([][]any, error)
	}{
		{registrationsTable, func() ([][]any, error) { return each(b.Registrations, registrationRow) }},
		{beatsTable, func() ([][]any, error) { return each(b.Beats, beatRow) }},
		{desiredTable, func() ([][]any, error) { return each(b.Desired, desiredRow) }},
		{observedTable, func() ([][]any, error) { return each(b.Observed, observedRow) }},
		{objectsTable, func() ([][]any, error) { return each(b.Objects, objectRow) }},
		{operationsTable, func() ([][]any, error) { return each(b.Operations, operationRow) }},
		{chainHeadsTable, func() ([][]any, error) { return chainHeadRows(b.ChainHeads), nil }},
		{acksTable, func() ([][]any, error) { return each(b.Acks, ackRow) }},
		{callsTable, func() ([][]any, error) { return each(b.Calls, callRow) }},
		{callEventsTable, func() ([][]any, error) { return callEventRows(b.Calls), nil }},
		{auditTable, func() ([][]any, error) { return each(b.Audit, auditRow) }},
		{deploymentsTable, func() ([][]any, error) { return each(b.Deployments, deploymentRow) }},
		{gapsTable, func() ([][]any, error) { return each(b.Gaps, gapRow) }},
		{targetsTable, func() ([][]any, error) { return each(b.Targets, targetRow) }},
		{healthTable, func() ([][]any, error) { return each(b.Health, healthRow) }},
	}
	for _, st := range steps {
		rows, err := st.rows()
		if err != nil {
			return fmt.Errorf("%s: %w", st.t.name, err)
		}
		if err := s.upsert(ctx, tx, st.t, rows); err != nil {
			return fmt.Errorf("%s: %w", st.t.name, err)
		}
	}
	return nil
}

// upsert writes rows into t. Rows with the same key keep the last (or, for
// a keep table, the first), since one statement may not update a row
// twice; rows go in key order, so that writers of overlapping keys lock
// them in the same order.
//
// Statements carry a power of two of rows, as many as the dialect takes
// and the rest in halves, so that a few statements serve every batch size
// and the drivers' caches of prepared statements stay small.
func (s *Store) upsert(ctx context.Context, tx *sql.Tx, t table, rows [][]any) (err error) {
	rows = dedupe(rows, t.keys, t.keep)
	per := 1
	for per*2 <= min(maxRows, s.d.maxParams/len(t.cols)) {
		per *= 2
	}
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			err = errors.Join(err, st.Close())
		}
	}()
	args := make([]any, 0, per*len(t.cols))
	for lo := 0; lo < len(rows); {
		n := per
		for n > len(rows)-lo {
			n /= 2
		}
		args = args[:0]
		for _, r := range rows[lo : lo+n] {
			args = append(args, r...)
		}
		lo += n
		if err := s.insert(ctx, tx, t, n, args, stmts); err != nil {
			return err
		}
	}
	return nil
}

// insert runs t's INSERT of n rows, prepared in stmts if the dialect
// prepares.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, t table, n int, args []any, stmts map[int]*sql.Stmt) error {
	q := s.d.bind(t.insert(n))
	if !s.d.prepare {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	st, ok := stmts[n]
	if !ok {
		var err error
		if st, err = tx.PrepareContext(ctx, q); err != nil {
			return err
		}
		stmts[n] = st
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

// insert is the statement that writes n rows into t.
func (t table) insert(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES ")
	one := "(" + strings.Repeat("?, ", len(t.cols)-1) + "?)"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	b.WriteString(" ON CONFLICT (" + strings.Join(t.cols[:t.keys], ", ") + ") DO ")
	if t.keep || t.keys == len(t.cols) {
		b.WriteString("NOTHING")
		return b.String()
	}
	b.WriteString("UPDATE SET ")
	for i, c := range t.cols[t.keys:] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}

// dedupe returns rows with one row per key (the first keys values), in key
// order.
func dedupe(rows [][]any, keys int, first bool) [][]any {
	if len(rows) < 2 {
		return rows
	}
	byKey := make(map[string][]any, len(rows))
	for _, r := range rows {
		k := keyString(r[:keys])
		if _, seen := byKey[k]; seen && first {
			continue
		}
		byKey[k] = r
	}
	out := make([][]any, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out
}

// keyString encodes key values unambiguously: each as its length, a colon
// and its text.
func keyString(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		t := fmt.Sprint(v)
		b.WriteString(strconv.Itoa(len(t)))
		b.WriteByte(':')
		b.WriteString(t)
	}
	return b.String()
}

// each maps vs to rows with row.
func each[T any](vs []T, row func(*T) ([]any, error)) ([][]any, error) {
	out := make([][]any, 0, len(vs))
	for i := range vs {
		r, err := row(&vs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// encoder collects encoding errors, so that row functions read as lists of
// columns.
type encoder struct{ err error }

func (e *encoder) note(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
}

func (e *encoder) time(t time.Time) any {
	v, err := nanos(t)
	e.note(err)
	return v
}

// timePtr is t's column value, NULL for nil.
func (e *encoder) timePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return e.time(*t)
}

func (e *encoder) json(v any) any {
	out, err := jsonText(v)
	e.note(err)
	return out
}

func registrationRow(v *projector.ClusterRegistration) ([]any, error) {
	var e encoder
	return []any{v.Cluster, v.Registered, e.json(v.Labels), e.time(v.RegisteredAt)}, e.err
}

func beatRow(v *projector.ClusterBeat) ([]any, error) {
	var e encoder
	return []any{v.Cluster, v.Seq, e.time(v.At), v.AgentVersion, v.ArgoCDVersion, v.Mode, int64(v.Applications),
		e.json(v.BySync), e.json(v.ByHealth), v.ConfigOffset, v.ConfigLag}, e.err
}

func desiredRow(v *projector.AppDesired) ([]any, error) {
	var e encoder
	return []any{v.Cluster, v.Namespace, v.Name, v.Project, e.json(v.Labels), v.Generation, v.Deleted, blob(v.Spec),
		v.EventID, e.time(v.UpdatedAt)}, e.err
}

func observedRow(v *projector.AppObserved) ([]any, error) {
	var e encoder
	return []any{v.Cluster, v.Namespace, v.Name, v.Seq, v.Deleted, e.json(v.Sync), e.json(v.Health),
		e.json(v.Operation), e.json(v.Conditions), e.json(v.Resources), v.AppliedGeneration, e.json(v.Rejected),
		e.time(v.UpdatedAt), e.json(v.Local)}, e.err
}

func objectRow(v *projector.ObjectGeneration) ([]any, error) {
	var e encoder
	return []any{v.Cluster, v.Kind, v.Namespace, v.Name, v.Generation, v.Deleted, v.EventID, e.time(v.UpdatedAt)}, e.err
}

func operationRow(v *projector.Operation) ([]any, error) {
	var e encoder
	return []any{v.RequestID, v.Cluster, v.EventID, v.Partition, v.Offset, e.time(v.At)}, e.err
}

func chainHeadRows(heads map[projector.Partition]string) [][]any {
	out := make([][]any, 0, len(heads))
	for p, h := range heads {
		out = append(out, []any{p.Topic, p.Partition, h})
	}
	return out
}

func ackRow(v *projector.Ack) ([]any, error) {
	var e encoder
	return []any{v.EventID, v.Cluster, v.Applied, v.Code, v.Reason, e.time(v.At), v.Result}, e.err
}

func callRow(v *projector.Call) ([]any, error) {
	var e encoder
	placement, gen := "", int64(0)
	if p := v.Placement; p != nil {
		placement, gen = p.Namespace+"/"+p.Name, p.Generation
	}
	return []any{v.RequestID, v.Actor, v.Action, v.Outcome, e.time(v.At), e.json(v.EventIDs), v.Via, placement, gen,
		len(v.EventIDs) > 0}, e.err
}

// callEventRows map to its call each event a call appended and the
// call's own audit record.
func callEventRows(calls []projector.Call) [][]any {
	var out [][]any
	for _, c := range calls {
		for _, id := range c.EventIDs {
			out = append(out, []any{id, c.RequestID})
		}
		if c.RecordID != "" {
			out = append(out, []any{c.RecordID, c.RequestID})
		}
	}
	return out
}

func auditRow(v *projector.AuditEntry) ([]any, error) {
	var e encoder
	return []any{v.Topic, v.Partition, v.Offset, e.time(v.At), v.EventID, v.Type, v.Cluster, v.Kind, v.Namespace,
		v.Name, v.Generation, v.Actor, blob(v.Before), blob(v.After), v.PrevHash, v.Hash, v.Refused}, e.err
}

func deploymentRow(v *projector.Deployment) ([]any, error) {
	var e encoder
	return []any{v.DeploymentID, v.EventID, v.Cluster, v.Namespace, v.Name, v.Generation, v.Revision,
		v.PreviousRevision, v.Phase, v.Initiator, e.time(v.StartedAt), e.time(v.FinishedAt), e.json(v.Images),
		v.Project, e.json(v.Labels), v.AppUID, nullInt64(v.HistoryID), e.timePtr(v.RevisionCommittedAt), v.Unchanged}, e.err
}

func gapRow(v *projector.Gap) ([]any, error) {
	var e encoder
	return []any{v.EventID, v.Cluster, v.Namespace, v.Name, v.Generation, v.AppUID, v.Reason, v.FromHistoryID,
		nullInt64(v.ToHistoryID), nullInt64(v.LastRecorded), v.Detail, e.time(v.At)}, e.err
}

func targetRow(v *projector.Target) ([]any, error) {
	var e encoder
	return []any{v.EventID, v.Cluster, v.Namespace, v.Name, v.Placement, v.PlacementGeneration, v.Generation,
		e.time(v.At)}, e.err
}

func healthRow(v *projector.HealthChange) ([]any, error) {
	var e encoder
	return []any{v.EventID, v.Cluster, v.Namespace, v.Name, v.Health, e.time(v.At)}, e.err
}
