package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
)

// appID names one Application object: a deleted and re-created Application
// has a new uid and is another Application for time to restore.
type appID struct {
	cluster, namespace, name, uid string
}

func idOf(d *projector.Deployment) appID {
	return appID{cluster: d.Cluster, namespace: d.Namespace, name: d.Name, uid: d.AppUID}
}

// byApp returns the indexes of recs per Application, ordered by finish
// time, then deployment id, and de-duplicated by deployment id: the first in
// recs wins, and records without an id are all kept. A deployment id names
// one Application's deployment, so duplicates are looked for within each
// Application, where the set of ids seen stays small.
func byApp(recs []projector.Deployment) map[appID][]int32 {
	apps := make(map[appID][]int32)
	for i := range recs {
		id := idOf(&recs[i])
		apps[id] = append(apps[id], int32(i))
	}
	seen := make(map[string]struct{})
	for id, idx := range apps {
		clear(seen)
		kept := idx[:0]
		for _, i := range idx {
			d := recs[i].DeploymentID
			if d != "" {
				if _, dup := seen[d]; dup {
					continue
				}
				seen[d] = struct{}{}
			}
			kept = append(kept, i)
		}
		apps[id] = kept
		slices.SortFunc(kept, func(a, b int32) int {
			ra, rb := &recs[a], &recs[b]
			if c := ra.FinishedAt.Compare(rb.FinishedAt); c != 0 {
				return c
			}
			return strings.Compare(ra.DeploymentID, rb.DeploymentID)
		})
	}
	return apps
}

// rowKey names a row: its group and its bucket's start in Unix seconds.
type rowKey struct {
	group string
	start int64
}

// acc accumulates one row.
type acc struct {
	deployments, failures, unrestored, leadUnknown, unchanged, degraded int
	restores, leads                                                     []time.Duration
}

// builder accumulates the rows of one report.
type builder struct {
	req      *Request
	from, to time.Time
	week     bool
	acc      map[rowKey]*acc
	health   map[projector.AppKey]healthLine
	ignored  int
	// clusters are, per group, the clusters of its rows; cluster is the
	// cluster of the Application being walked.
	clusters map[string]map[string]struct{}
	cluster  string
	// lastKey and last cache the row of the previous record: an
	// Application's records mostly fall in the same row as their
	// neighbours.
	lastKey rowKey
	last    *acc
}

func newBuilder(req *Request, from, to time.Time) *builder {
	return &builder{req: req, from: from, to: to, week: req.Bucket == Week, acc: make(map[rowKey]*acc),
		health: healthByApp(req.Health), clusters: make(map[string]map[string]struct{})}
}

// walk adds one Application's records, idx in finish order, walking
// backwards so that the next successful deployment after each failure is at
// hand.
func (b *builder) walk(recs []projector.Deployment, id appID, idx []int32) {
	b.cluster, b.last = id.cluster, nil // the cached row counted another cluster
	var appGroup string
	if b.req.By == ByApp {
		appGroup = id.cluster + "/" + id.namespace + "/" + id.name
	}
	var next time.Time
	restored := false
	for i := len(idx) - 1; i >= 0; i-- {
		d := &recs[idx[i]]
		at := d.FinishedAt
		if at.Before(b.from) {
			return
		}
		in := at.Before(b.to)
		switch d.Phase {
		case PhaseSucceeded:
			if in {
				b.success(b.row(b.group(d, appGroup), at), d)
			}
			next, restored = at, true // a re-sync of what ran before restores too
		case PhaseFailed, PhaseError:
			if !in {
				continue
			}
			a := b.row(b.group(d, appGroup), at)
			if d.Unchanged {
				a.unchanged++ // a re-sync or self-heal that failed: no change failed
				continue
			}
			a.failures++
			end, ok := next, restored
			if ok {
				end, ok = b.health[projector.AppKey{Cluster: id.cluster, Namespace: id.namespace, Name: id.name}].restoredBy(next)
			}
			if ok {
				a.restores = append(a.restores, max(end.Sub(at), 0))
			} else {
				a.unrestored++
			}
		default:
			if in {
				b.ignored++
			}
		}
	}
}

// success adds a successful deployment to its row.
func (b *builder) success(a *acc, d *projector.Deployment) {
	if d.Unchanged {
		a.unchanged++ // a re-sync that changed nothing, or a self-heal
		return
	}
	a.deployments++
	if d.Revision == d.PreviousRevision {
		return // a sync of the same revision is no change to measure
	}
	commitTime := b.req.CommitTime
	if commitTime == nil {
		commitTime = RecordedCommitTime
	}
	c, ok := commitTime(*d)
	if !ok || c.After(d.FinishedAt) {
		a.leadUnknown++
		return
	}
	a.leads = append(a.leads, d.FinishedAt.Sub(c))
}

// group returns the group of a record; appGroup is its Application's name
// when grouping by Application.
func (b *builder) group(d *projector.Deployment, appGroup string) string {
	return groupOf(b.req, d, appGroup)
}

func groupOf(req *Request, d *projector.Deployment, appGroup string) string {
	switch req.By {
	case ByApp:
		return appGroup
	case ByProject:
		if d.Project == "" {
			return None
		}
		return d.Project
	case ByCluster:
		return d.Cluster
	default:
		if v, ok := d.Labels[req.Label]; ok {
			return v
		}
		return None
	}
}

// row returns the accumulator of the row that a record of group finished at
// t belongs to.
func (b *builder) row(group string, t time.Time) *acc {
	k := rowKey{group: group, start: bucketStart(t.Unix(), b.week)}
	if b.last != nil && k == b.lastKey {
		return b.last
	}
	a := b.acc[k]
	if a == nil {
		a = &acc{}
		b.acc[k] = a
	}
	cs := b.clusters[group]
	if cs == nil {
		cs = make(map[string]struct{})
		b.clusters[group] = cs
	}
	cs[b.cluster] = struct{}{}
	b.lastKey, b.last = k, a
	return a
}

// keys returns the keys of the report's rows by group, then bucket.
func (b *builder) keys() []rowKey {
	keys := make([]rowKey, 0, len(b.acc))
	for k := range b.acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y rowKey) int {
		if c := strings.Compare(x.group, y.group); c != 0 {
			return c
		}
		return cmp.Compare(x.start, y.start)
	})
	return keys
}

// rows returns the report's rows by group, then bucket; the records cover
// [covFrom, covTo).
func (b *builder) rows(covFrom, covTo time.Time) []Row {
	keys := b.keys()
	days := 1
	if b.week {
		days = 7
	}
	rows := make([]Row, 0, len(keys))
	for _, k := range keys {
		a := b.acc[k]
		start := time.Unix(k.start, 0).UTC()
		end := start.AddDate(0, 0, days)
		rows = append(rows, Row{
			Group: k.group, Start: start, End: end,
			Deployments: a.deployments, Failures: a.failures, Unchanged: a.unchanged, Degraded: a.degraded,
			PerDay:            perDay(a.deployments, Overlap(start, end, covFrom, covTo)),
			ChangeFailureRate: failureRate(a.failures, a.deployments),
			TimeToRestore:     summarize(a.restores), Unrestored: a.unrestored,
			LeadTime: summarize(a.leads), LeadTimeUnknown: a.leadUnknown,
		})
	}
	return rows
}

const secondsPerDay = 24 * 60 * 60

// bucketStart returns the start, in Unix seconds, of the UTC day or ISO
// week (from Monday) holding the instant sec.
func bucketStart(sec int64, week bool) int64 {
	day := floorDiv(sec, secondsPerDay)
	if week {
		// 1970-01-01 was a Thursday, day 3 of an ISO week counted from 0.
		day -= floorMod(day+3, 7)
	}
	return day * secondsPerDay
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
