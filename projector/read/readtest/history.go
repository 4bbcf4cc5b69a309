package readtest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// configPartitions is how many partitions the seeded config topic has.
const configPartitions = 6

// SeedHistory writes the history of a fleet Seed wrote, as the fold
// would have: for each of the first l.Placed Applications, alice applies
// generation 2 of the placement of its name (argocd/app-NNN), which the
// hub writes to every cluster two hours before l.Now and every cluster
// applies; then bob makes l.Reads read calls; and each Application
// records one deployment a day on each cluster for the last l.Days days,
// every twentieth a failed sync. The audit entries are chained.
func SeedHistory(ctx context.Context, s projector.Store, l Large) error {
	h := history{Large: l, heads: map[projector.Partition]string{}, offsets: map[projector.Partition]int64{}}
	for a := range l.Placed {
		if err := h.placement(a); err != nil {
			return err
		}
	}
	t := l.Now.Add(-time.Hour)
	for i := range l.Reads {
		id := fmt.Sprintf("read-%d", i)
		if err := h.call(t.Add(time.Duration(i)*time.Second), schemas.AuditRecorded{RequestID: id, Actor: "bob",
			Action: "read", Method: "GET", Path: "/api/v1/clusters", Outcome: "allowed", StatusCode: 200}); err != nil {
			return err
		}
	}
	h.b.ChainHeads = h.heads
	if err := s.Commit(ctx, &h.b); err != nil {
		return fmt.Errorf("seeding the audit history: %w", err)
	}
	for day := range l.Days {
		b := &projector.Batch{}
		for c := range l.Clusters {
			for a := range l.AppsPerCluster {
				b.Deployments = append(b.Deployments, dailyDeployment(l.Now, c, a, day))
			}
		}
		if err := s.Commit(ctx, b); err != nil {
			return fmt.Errorf("seeding day %d's deployments: %w", day, err)
		}
	}
	return nil
}

// history is the audit batch SeedHistory builds, with its chains.
type history struct {
	Large
	b       projector.Batch
	heads   map[projector.Partition]string
	offsets map[projector.Partition]int64
}

// append chains e onto its partition's chain and adds it to the batch.
func (h *history) append(e projector.AuditEntry) error {
	p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
	e.Offset = h.offsets[p]
	h.offsets[p]++
	e.PrevHash = h.heads[p]
	hash, err := projector.Chain(e.PrevHash, e)
	if err != nil {
		return fmt.Errorf("chaining seeded audit entry: %w", err)
	}
	e.Hash, h.heads[p] = hash, hash
	h.b.Audit = append(h.b.Audit, e)
	return nil
}

// call records an API call at t, as the hub's audit record folds.
func (h *history) call(t time.Time, r schemas.AuditRecorded) error {
	rec, err := json.Marshal(r)
	if err != nil {
		return err
	}
	id := "rec-" + r.RequestID
	h.b.Calls = append(h.b.Calls, projector.Call{RequestID: r.RequestID, Actor: r.Actor, Action: r.Action, Outcome: r.Outcome,
		At: t, EventIDs: r.EventIDs, Via: r.Via, Placement: r.Placement, RecordID: id})
	return h.append(projector.AuditEntry{Topic: "argosy.audit", At: t, EventID: id, Type: "io.argosy.hub.audit.recorded.v1",
		Cluster: r.Cluster, Kind: "api", Name: r.Action, Actor: r.Actor, After: rec})
}

// placement is Application a's placement change: its apply, its upsert
// on every cluster with the targets and acknowledgements, and the call
// that placed them.
func (h *history) placement(a int) error {
	name := fmt.Sprintf("app-%03d", a)
	t0 := h.Now.Add(-2 * time.Hour).Add(time.Duration(a) * time.Minute)
	ref := &schemas.PlacementRef{Namespace: "argocd", Name: name, Generation: 2}
	if err := h.call(t0, schemas.AuditRecorded{RequestID: "apply-" + name, Actor: "alice", Action: "placements.apply", Method: "POST",
		Path: "/api/v1/placements", Outcome: "allowed", StatusCode: 200, EventIDs: []string{"placement-" + name}, Placement: ref}); err != nil {
		return err
	}
	before := json.RawMessage(`{"project":"default","source":{"path":"guestbook","targetRevision":"v1"}}`)
	after := json.RawMessage(`{"project":"default","source":{"path":"guestbook","targetRevision":"v2"}}`)
	var placed []string
	for c := range h.Clusters {
		cluster, id := fmt.Sprintf("c-%05d", c), fmt.Sprintf("up-%s-%05d", name, c)
		at := t0.Add(time.Duration(c) * time.Millisecond)
		placed = append(placed, id)
		if err := h.append(projector.AuditEntry{Topic: "argosy.config", Partition: int32(c % configPartitions), At: at, EventID: id,
			Type: "io.argosy.config.application.upserted.v1", Cluster: cluster, Kind: schemas.SubjectApplications,
			Namespace: "argocd", Name: name, Generation: 2, Before: before, After: after}); err != nil {
			return err
		}
		key := projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: name}
		h.b.Targets = append(h.b.Targets, projector.Target{AppKey: key, Placement: name, PlacementGeneration: 2, Generation: 2, EventID: id, At: at})
		h.b.Acks = append(h.b.Acks, projector.Ack{EventID: id, Cluster: cluster, Applied: true, At: at.Add(2 * time.Second)})
	}
	return h.call(t0.Add(2*time.Second), schemas.AuditRecorded{RequestID: "place-" + name, Actor: "alice", Action: "placements.reconcile",
		Method: "POST", Path: "/api/v1/apps", Outcome: "allowed", StatusCode: 200, EventIDs: placed, Via: schemas.ViaPlacement, Placement: ref})
}

// dailyDeployment is Application a's deployment on cluster c, day days
// before now: a sync that took a minute, of a revision committed half an
// hour before, Failed for every twentieth. Today's is of generation 2,
// which the placement change wrote; earlier ones are of generation 1.
func dailyDeployment(now time.Time, c, a, day int) projector.Deployment {
	cluster := fmt.Sprintf("c-%05d", c)
	done := now.Add(-time.Duration(day) * 24 * time.Hour).Add(-time.Duration(c%50+1) * time.Minute)
	gen, committed := int64(1), done.Add(-31*time.Minute)
	if day == 0 {
		gen = 2
	}
	phase, hist := "Succeeded", new(int64)
	*hist = int64(100 - day)
	if (c+a+day)%20 == 0 {
		phase, hist = "Failed", nil
	}
	id := fmt.Sprintf("uid-%s-%03d/%d", cluster, a, 100-day)
	return projector.Deployment{EventID: "dep-" + id, DeploymentRecorded: schemas.DeploymentRecorded{
		Resource:     schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: fmt.Sprintf("app-%03d", a), Generation: gen},
		DeploymentID: id, Revision: fmt.Sprintf("%012x", 100-day), Phase: phase, Initiator: "automated",
		StartedAt: done.Add(-time.Minute), FinishedAt: done, Project: "default", AppUID: fmt.Sprintf("uid-%s-%03d", cluster, a), HistoryID: hist,
		RevisionCommittedAt: &committed}}
}
