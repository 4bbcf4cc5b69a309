package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// where builds a WHERE clause of ANDed terms.
type where struct {
	terms []string
	args  []any
	err   error
}

func (w *where) add(term string, args ...any) {
	w.terms = append(w.terms, term)
	w.args = append(w.args, args...)
}

// eq adds col = v, unless v is empty (which matches all).
func (w *where) eq(col, v string) {
	if v != "" {
		w.add(col+" = ?", v)
	}
}

// span adds from <= col < to, each bound only if set.
func (w *where) span(col string, from, to time.Time) {
	for _, b := range []struct {
		op string
		t  time.Time
	}{{" >= ?", from}, {" < ?", to}} {
		if b.t.IsZero() {
			continue
		}
		n, err := nanos(b.t)
		if err != nil && w.err == nil {
			w.err = err
		}
		w.add(col+b.op, n)
	}
}

func (w *where) String() string {
	if len(w.terms) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.terms, " AND ")
}

// Clusters returns every cluster that is registered or has sent a
// heartbeat, by name, with its count of desired Applications that are not
// deleted.
func (s *Store) Clusters(ctx context.Context) ([]projector.ClusterRow, error) {
	out, err := s.clusters(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	return out, nil
}

// Cluster returns one cluster, and whether the store knows it.
func (s *Store) Cluster(ctx context.Context, name string) (projector.ClusterRow, bool, error) {
	if name == "" {
		return projector.ClusterRow{}, false, nil
	}
	out, err := s.clusters(ctx, name)
	if err != nil {
		return projector.ClusterRow{}, false, fmt.Errorf("cluster %s: %w", name, err)
	}
	if len(out) == 0 {
		return projector.ClusterRow{}, false, nil
	}
	return out[0], true, nil
}

// clusters returns the cluster called name, or every cluster if name is
// empty. SQLite has FULL OUTER JOIN only since 3.39, so the names are a
// UNION, which both engines plan well.
func (s *Store) clusters(ctx context.Context, name string) ([]projector.ClusterRow, error) {
	var w where
	w.eq("cluster", name)
	args := append(append(append([]any{}, w.args...), w.args...), w.args...)
	q := `WITH names AS (SELECT cluster FROM registrations` + w.String() + `
			UNION SELECT cluster FROM beats` + w.String() + `),
		apps AS (SELECT cluster, COUNT(*) AS n FROM desired_apps` + w.String() + and(w) + ` NOT deleted GROUP BY cluster)
		SELECT n.cluster, ` + registrationCols("r") + `, ` + beatCols("b") + `, COALESCE(a.n, 0)
		FROM names n
		LEFT JOIN registrations r ON r.cluster = n.cluster
		LEFT JOIN beats b ON b.cluster = n.cluster
		LEFT JOIN apps a ON a.cluster = n.cluster
		ORDER BY n.cluster`
	var out []projector.ClusterRow
	err := s.each(ctx, q, args, func(rows *sql.Rows) error {
		var row projector.ClusterRow
		rdest, rbuild := scanRegistration()
		bdest, bbuild := scanBeat()
		var n int64
		dest := append(append(append([]any{&row.Name}, rdest...), bdest...), &n)
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		var err error
		if row.Registration, err = rbuild(); err != nil {
			return err
		}
		if row.Beat, err = bbuild(); err != nil {
			return err
		}
		row.Applications = int(n)
		out = append(out, row)
		return nil
	})
	return out, err
}

// ClusterSummaries returns every cluster Clusters returns, by name, in
// brief: without counting Applications or decoding the heartbeat's counts.
func (s *Store) ClusterSummaries(ctx context.Context) ([]projector.ClusterSummary, error) {
	q := `WITH names AS (SELECT cluster FROM registrations UNION SELECT cluster FROM beats)
		SELECT n.cluster, ` + registrationCols("r") + `, b.at, b.config_lag, b.applications
		FROM names n
		LEFT JOIN registrations r ON r.cluster = n.cluster
		LEFT JOIN beats b ON b.cluster = n.cluster
		ORDER BY n.cluster`
	var out []projector.ClusterSummary
	err := s.each(ctx, q, nil, func(rows *sql.Rows) error {
		var c projector.ClusterSummary
		rdest, rbuild := scanRegistration()
		var at, lag, apps sql.NullInt64
		if err := rows.Scan(append(append([]any{&c.Name}, rdest...), &at, &lag, &apps)...); err != nil {
			return err
		}
		var err error
		if c.Registration, err = rbuild(); err != nil {
			return err
		}
		if at.Valid {
			c.HeartbeatAt, c.ConfigLag, c.Applications = fromNanos(at), lag.Int64, int(apps.Int64)
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster summaries: %w", err)
	}
	return out, nil
}

// and continues w's WHERE clause, or starts one.
func and(w where) string {
	if len(w.terms) == 0 {
		return " WHERE"
	}
	return " AND"
}

// Apps returns the Applications that match f, desired or observed (deleted
// ones too, with their Deleted flags), by cluster, namespace and name. The
// desired and local specs are read within one answer's budget (specs.go):
// a spec past it is a marker.
func (s *Store) Apps(ctx context.Context, f projector.AppFilter) ([]projector.AppRow, error) {
	var w where
	w.eq("cluster", f.Cluster)
	w.eq("namespace", f.Namespace)
	w.eq("name", f.Name)
	inline := s.inlineSpec(0)
	dcols, ocols, sizes := s.appColumns(inline, f.Brief)
	q := `WITH k AS (SELECT cluster, namespace, name FROM desired_apps` + w.String() + `
			UNION SELECT cluster, namespace, name FROM observed_apps` + w.String() + `)
		SELECT k.cluster, k.namespace, k.name, ` + strings.Join(dcols, ", ") + `, ` + strings.Join(ocols, ", ") +
		`, ` + sizes + `
		FROM k
		LEFT JOIN desired_apps d ON d.cluster = k.cluster AND d.namespace = k.namespace AND d.name = k.name
		LEFT JOIN observed_apps o ON o.cluster = k.cluster AND o.namespace = k.namespace AND o.name = k.name
		ORDER BY k.cluster, k.namespace, k.name`
	var out []projector.AppRow
	var specSizes []specSize
	err := s.each(ctx, q, append(append([]any{}, w.args...), w.args...), func(rows *sql.Rows) error {
		var row projector.AppRow
		ddest, dbuild := scanDesired()
		odest, obuild := scanObserved()
		var spec, local specSize
		dest := append(append(append([]any{&row.Cluster, &row.Namespace, &row.Name}, ddest...), odest...), &spec, &local)
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		specSizes = append(specSizes, spec, local)
		var err error
		if row.Desired, err = dbuild(); err != nil {
			return err
		}
		if row.Observed, err = obuild(); err != nil {
			return err
		}
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("applications: %w", err)
	}
	if f.Brief {
		return out, nil
	}
	if err := s.appSpecs(ctx, out, specSizes, inline); err != nil {
		return nil, fmt.Errorf("applications: specs: %w", err)
	}
	return out, nil
}

// appColumns are the select lists of Apps' desired and observed columns,
// and of the sizes of their specs; brief reads none of the columns
// projector.AppFilter.Brief leaves out.
func (s *Store) appColumns(inline int, brief bool) (dcols, ocols []string, sizes string) {
	dcols, ocols = slices.Clone(desiredColumns), slices.Clone(observedColumns)
	for i, c := range dcols {
		dcols[i] = "d." + c
		switch {
		case c == "spec" && brief:
			dcols[i] = "NULL"
		case c == "spec":
			dcols[i] = bounded("d.spec", sizeSQL("d.spec"), inline)
		}
	}
	for i, c := range ocols {
		ocols[i] = "o." + c
		switch {
		case brief && (c == "conditions" || c == "resources" || c == "local"):
			ocols[i] = "NULL"
		case c == "local":
			ocols[i] = `CASE WHEN ` + localSizeSQL("o.local") + ` <= ` + strconv.Itoa(inline) + ` THEN o.local ELSE ` +
				fmt.Sprintf(s.d.withoutSpec, "o.local") + ` END`
		}
	}
	if brief {
		return dcols, ocols, "NULL, NULL"
	}
	return dcols, ocols, sizeSQL("d.spec") + ", " + localSizeSQL("o.local")
}

// whoSQL is the actor of audit entry a: its own for API calls, otherwise
// that of the call that appended its event (the earliest, should several
// name it).
const whoSQL = `COALESCE(NULLIF(a.actor, ''), (SELECT c.actor FROM call_events ce
	JOIN calls c ON c.request_id = ce.request_id WHERE ce.event_id = a.event_id
	ORDER BY c.at, c.request_id LIMIT 1), '')`

// callSQL is the request id of the call audit entry a belongs to: the
// call itself for an API call's record, otherwise the call that appended
// its event, as whoSQL chooses it.
const callSQL = `(SELECT c.request_id FROM call_events ce
	JOIN calls c ON c.request_id = ce.request_id WHERE ce.event_id = a.event_id
	ORDER BY c.at, c.request_id LIMIT 1)`

// changesSQL keeps, of the entries x joined to their calls c, the changes
// and refusals: it leaves out the API calls allowed that appended nothing.
const changesSQL = `(x.kind <> 'api' OR c.request_id IS NULL OR c.outcome <> 'allowed' OR c.changed)`

// Audit returns the audit entries that match f, newest first (by log time,
// then offset), at most f.Limit of them if it is positive. Each entry's
// Actor is joined from the calls for config changes, so Audit's entries
// are not for Verify: Chain's are. Results are the entry's event's acks,
// by cluster. The entries' specs are read within one answer's budget
// (specs.go): a spec past it is a marker.
func (s *Store) Audit(ctx context.Context, f projector.AuditFilter) ([]projector.AuditRow, error) {
	var w where
	w.eq("a.cluster", f.Cluster)
	w.eq("a.namespace", f.Namespace)
	w.eq("a.name", f.Name)
	w.span("a.at", f.From, f.To)
	if w.err != nil {
		return nil, fmt.Errorf("audit: %w", w.err)
	}
	args := w.args
	inline := s.inlineSpec(f.Limit)
	sel := make([]string, len(auditColumns))
	for i, c := range auditColumns {
		switch c {
		case "actor":
			sel[i] = whoSQL + " AS actor"
		case "before", "after":
			sel[i] = bounded("a."+c, sizeSQL("a."+c), inline) + " AS " + c + ", " + sizeSQL("a."+c) + " AS " + c + "_size"
		default:
			sel[i] = "a." + c
		}
	}
	q := `SELECT ` + columns("x", auditColumns) + `, x.before_size, x.after_size, COALESCE(c.request_id, ''),
		COALESCE(c.via, ''), COALESCE(c.placement, ''), COALESCE(c.placement_generation, 0) FROM (SELECT ` +
		strings.Join(sel, ", ") + `, ` + callSQL + ` AS call_id FROM audit_entries a` + w.String() + `) x
		LEFT JOIN calls c ON c.request_id = x.call_id`
	var cond []string
	if f.Actor != "" {
		cond = append(cond, `x.actor = ?`)
		args = append(args, f.Actor)
	}
	if f.Changes {
		cond = append(cond, changesSQL)
	}
	if len(cond) > 0 {
		q += ` WHERE ` + strings.Join(cond, " AND ")
	}
	q += ` ORDER BY x.at DESC NULLS LAST, x.off DESC, x.topic, x.part`
	if f.Limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(f.Limit)
	}
	var out []projector.AuditRow
	var sizes []specSize
	err := s.each(ctx, q, args, func(rows *sql.Rows) error {
		dest, build := scanAudit()
		var before, after specSize
		var row projector.AuditRow
		var placement string
		var gen int64
		if err := rows.Scan(append(dest, &before, &after, &row.RequestID, &row.Via, &placement, &gen)...); err != nil {
			return err
		}
		row.AuditEntry = build()
		if ns, name, ok := strings.Cut(placement, "/"); ok {
			row.Placement = &schemas.PlacementRef{Namespace: ns, Name: name, Generation: gen}
		}
		out = append(out, row)
		sizes = append(sizes, before, after)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if err := s.auditSpecs(ctx, out, sizes, inline); err != nil {
		return nil, fmt.Errorf("audit: specs: %w", err)
	}
	if err := s.joinResults(ctx, out); err != nil {
		return nil, fmt.Errorf("audit: results: %w", err)
	}
	return out, nil
}

// joinResults sets each row's Results to its event's acks; a refused
// replay has none, since the acks are of the event it copies.
func (s *Store) joinResults(ctx context.Context, out []projector.AuditRow) error {
	byEvent := map[string][]int{}
	var ids []string
	for i, r := range out {
		if r.Refused != "" {
			continue
		}
		if _, ok := byEvent[r.EventID]; !ok {
			ids = append(ids, r.EventID)
		}
		byEvent[r.EventID] = append(byEvent[r.EventID], i)
	}
	if len(ids) == 0 {
		return nil
	}
	q := `SELECT ` + columns("", ackColumns) + ` FROM acks`
	return s.inChunks(ctx, q, len(ids), `event_id = ?`, func(i int) []any { return []any{ids[i]} },
		func(rows *sql.Rows) error {
			a, err := scanAck(rows)
			if err != nil {
				return err
			}
			for _, i := range byEvent[a.EventID] {
				out[i].Results = insertAck(out[i].Results, a)
			}
			return nil
		})
}

// insertAck adds a to acks, which stay in cluster order.
func insertAck(acks []projector.Ack, a projector.Ack) []projector.Ack {
	i := len(acks)
	for i > 0 && acks[i-1].Cluster > a.Cluster {
		i--
	}
	acks = append(acks, projector.Ack{})
	copy(acks[i+1:], acks[i:])
	acks[i] = a
	return acks
}

// Chain returns the audit entries of partition p after offset after, in
// offset order, at most limit of them if it is positive. They are as
// stored, for Verify.
func (s *Store) Chain(ctx context.Context, p projector.Partition, after int64, limit int) ([]projector.AuditEntry, error) {
	q := `SELECT ` + columns("", auditColumns) + ` FROM audit_entries WHERE topic = ? AND part = ? AND off > ? ORDER BY off`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	var out []projector.AuditEntry
	err := s.each(ctx, q, []any{p.Topic, p.Partition, after}, func(rows *sql.Rows) error {
		dest, build := scanAudit()
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		out = append(out, build())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chain %s/%d: %w", p.Topic, p.Partition, err)
	}
	return out, nil
}

// ChainPartitions returns the partitions that have audit entries, by topic
// and partition.
func (s *Store) ChainPartitions(ctx context.Context) ([]projector.Partition, error) {
	var out []projector.Partition
	err := s.each(ctx, `SELECT DISTINCT topic, part FROM audit_entries ORDER BY topic, part`, nil,
		func(rows *sql.Rows) error {
			var p projector.Partition
			if err := rows.Scan(&p.Topic, &p.Partition); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("chain partitions: %w", err)
	}
	return out, nil
}

// deploymentWhere is f's WHERE clause, on the time column at.
func deploymentWhere(f projector.DeploymentFilter, at string, project bool) where {
	var w where
	w.eq("cluster", f.Cluster)
	if project {
		w.eq("project", f.Project)
	}
	w.eq("namespace", f.Namespace)
	w.eq("name", f.Name)
	w.span(at, f.From, f.To)
	return w
}

// Deployments returns the deployment records that match f, by finish time
// (From inclusive, To exclusive), then deployment id: only the f.Last newest
// when f.Last is positive.
func (s *Store) Deployments(ctx context.Context, f projector.DeploymentFilter) ([]projector.Deployment, error) {
	w := deploymentWhere(f, "finished_at", true)
	if w.err != nil {
		return nil, fmt.Errorf("deployments: %w", w.err)
	}
	q := `SELECT ` + columns("", deploymentColumns) + ` FROM deployments` + w.String() +
		` ORDER BY finished_at NULLS FIRST, deployment_id`
	args := w.args
	if f.Last > 0 {
		q = `SELECT ` + columns("x", deploymentColumns) + ` FROM (SELECT ` + columns("", deploymentColumns) +
			` FROM deployments` + w.String() + ` ORDER BY finished_at DESC NULLS LAST, deployment_id DESC LIMIT ?) x
			ORDER BY x.finished_at NULLS FIRST, x.deployment_id`
		args = append(append([]any{}, w.args...), f.Last)
	}
	var out []projector.Deployment
	err := s.each(ctx, q, args, func(rows *sql.Rows) error {
		d, err := scanDeployment(rows)
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deployments: %w", err)
	}
	return out, nil
}

// Gaps returns the deployment gaps that match f's cluster, namespace, name
// and time span (on the gap's log time), by time, then event id. Gaps have
// no project: f.Project is not looked at.
func (s *Store) Gaps(ctx context.Context, f projector.DeploymentFilter) ([]projector.Gap, error) {
	return appendRows(ctx, s, "gaps", gapColumns, f, scanGap)
}

// Targets returns the placement targets that match f's cluster, namespace,
// name (the placement's) and time span (on the target's log time), by
// time, then event id. Targets have no project: f.Project is not looked at.
func (s *Store) Targets(ctx context.Context, f projector.DeploymentFilter) ([]projector.Target, error) {
	return appendRows(ctx, s, "targets", targetColumns, f, scanTarget)
}

// HealthChanges returns the health changes that match f's cluster,
// namespace, name and time span (on their log time), by time, then event
// id; f.Project is not looked at.
func (s *Store) HealthChanges(ctx context.Context, f projector.DeploymentFilter) ([]projector.HealthChange, error) {
	return appendRows(ctx, s, "health_changes", healthColumns, f, scanHealth)
}

// appendRows reads the rows of an append-only table keyed by event id and
// timed by at that match f, by time, then event id.
func appendRows[T any](ctx context.Context, s *Store, tbl string, cols []string, f projector.DeploymentFilter,
	scan func(*sql.Rows) (T, error)) ([]T, error) {
	w := deploymentWhere(f, "at", false)
	if w.err != nil {
		return nil, fmt.Errorf("%s: %w", tbl, w.err)
	}
	q := `SELECT ` + columns("", cols) + ` FROM ` + tbl + w.String() + ` ORDER BY at NULLS FIRST, event_id`
	var out []T
	err := s.each(ctx, q, w.args, func(rows *sql.Rows) error {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tbl, err)
	}
	return out, nil
}
