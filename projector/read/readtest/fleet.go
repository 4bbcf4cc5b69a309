package readtest

import (
	"encoding/json"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// Now returns the instant Fleet is seen from: Monday 2 March 2026, 12:00 UTC.
func Now() time.Time { return time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) }

// Fleet returns a Query over a small fleet seen at Now with a 30 s
// heartbeat interval:
//   - prod-eu (env=prod, region=eu) is connected, with guestbook (Synced,
//     Healthy) and billing (OutOfSync, Degraded, generation 5 rejected);
//   - prod-us (env=prod, region=us) last beat five minutes ago, so it is not
//     connected, with its own guestbook;
//   - staging is registered and has never sent a heartbeat.
//
// Its audit history is five entries on three partitions whose chains hold
// (Entries as stored; AuditRows with actors and results joined in), and it
// has five deployment records and one gap.
func Fleet() *Query {
	now := Now()
	q := &Query{}
	q.ClusterRows = []projector.ClusterRow{
		cluster("prod-eu", map[string]string{"env": "prod", "region": "eu"}, now.Add(-10*time.Second), 2),
		cluster("prod-us", map[string]string{"env": "prod", "region": "us"}, now.Add(-5*time.Minute), 1),
		cluster("staging", map[string]string{"env": "staging"}, time.Time{}, 0),
	}
	q.ClusterRows[0].Beat.BySync = map[string]int{"Synced": 1, "OutOfSync": 1}
	q.ClusterRows[0].Beat.ByHealth = map[string]int{"Healthy": 1, "Degraded": 1}
	q.AppRows = []projector.AppRow{
		app("prod-eu", "guestbook", "web", 3, "Synced", "Healthy", 3, nil),
		app("prod-eu", "billing", "payments", 5, "OutOfSync", "Degraded", 4,
			&projector.Rejection{Generation: 5, EventID: "ev-billing-5", Code: schemas.RejectInvalid, Reason: "spec.source.repoURL is empty"}),
		app("prod-us", "guestbook", "web", 2, "Synced", "Healthy", 2, nil),
	}
	q.Entries, q.AuditRows = audit()
	q.DeploymentRows = []projector.Deployment{
		deployment("prod-eu", "guestbook", "web", "Succeeded", now.Add(-8*24*time.Hour), 90*time.Second),
		deployment("prod-eu", "guestbook", "web", "Succeeded", now.Add(-26*time.Hour), 60*time.Second),
		deployment("prod-eu", "billing", "payments", "Failed", now.Add(-25*time.Hour), 30*time.Second),
		deployment("prod-eu", "billing", "payments", "Succeeded", now.Add(-2*time.Hour), 120*time.Second),
		deployment("prod-us", "guestbook", "web", "Succeeded", now.Add(-3*time.Hour), 45*time.Second),
		selfHeal(deployment("prod-us", "guestbook", "web", "Succeeded", now.Add(-time.Hour), 5*time.Second)),
	}
	// The placement argocd/guestbook: generation 1 reached both clusters
	// and converged; generation 2 waits on both.
	target := func(cluster string, pgen, gen int64, at time.Time) projector.Target {
		return projector.Target{AppKey: projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: "guestbook"},
			Placement: "guestbook", PlacementGeneration: pgen, Generation: gen, EventID: "ev-target-" + cluster + "-" + at.Format("0102150405"), At: at}
	}
	q.TargetRows = []projector.Target{
		target("prod-eu", 1, 1, now.Add(-8*24*time.Hour-10*time.Minute)), target("prod-us", 1, 1, now.Add(-8*24*time.Hour-10*time.Minute)),
		target("prod-eu", 2, 2, now.Add(-30*time.Minute)), target("prod-us", 2, 2, now.Add(-30*time.Minute)),
	}
	// prod-eu's guestbook turned Degraded after its deployment of 26 hours
	// ago, and Healthy again an hour later.
	q.HealthRows = []projector.HealthChange{
		{AppKey: projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "guestbook"}, Health: projector.HealthDegraded,
			At: now.Add(-20 * time.Hour), EventID: "ev-health-1"},
		{AppKey: projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "guestbook"}, Health: projector.HealthHealthy,
			At: now.Add(-19 * time.Hour), EventID: "ev-health-2"},
	}
	to := int64(7)
	q.GapRows = []projector.Gap{{
		DeploymentGap: schemas.DeploymentGap{Resource: schemas.Resource{Cluster: "prod-us", Namespace: "argocd", Name: "guestbook"},
			Reason: schemas.GapHistoryTrimmed, FromHistoryID: 3, ToHistoryID: &to},
		EventID: "ev-gap-1", At: now.Add(-3 * time.Hour),
	}}
	return q
}

func cluster(name string, labels map[string]string, beat time.Time, apps int) projector.ClusterRow {
	c := projector.ClusterRow{Name: name, Applications: apps, Registration: &projector.ClusterRegistration{
		Cluster: name, Registered: true, Labels: labels, RegisteredAt: Now().Add(-30 * 24 * time.Hour)}}
	if !beat.IsZero() {
		c.Beat = &projector.ClusterBeat{Cluster: name, Seq: 1200, At: beat, AgentVersion: "v0.3.0",
			ArgoCDVersion: "v2.14.21", Mode: schemas.ModeManaged, Applications: apps,
			BySync: map[string]int{"Synced": apps}, ByHealth: map[string]int{"Healthy": apps}, ConfigOffset: 41}
	}
	return c
}

func app(cluster, name, project string, gen int64, sync, health string, applied int64, rej *projector.Rejection) projector.AppRow {
	key := projector.AppKey{Cluster: cluster, Namespace: "argocd", Name: name}
	return projector.AppRow{
		AppKey: key,
		Desired: &projector.AppDesired{AppKey: key, Project: project, Labels: map[string]string{"team": project},
			Generation: gen, Spec: json.RawMessage(`{"project":"` + project + `"}`), EventID: "ev-" + name,
			UpdatedAt: Now().Add(-time.Hour)},
		Observed: &projector.AppObserved{AppKey: key, Seq: 7, Sync: &schemas.SyncStatus{Status: sync, Revision: "4f2a9c1"},
			Health: &schemas.HealthStatus{Status: health}, AppliedGeneration: applied, Rejected: rej,
			UpdatedAt: Now().Add(-time.Minute)},
	}
}

func deployment(cluster, name, project, phase string, finished time.Time, took time.Duration) projector.Deployment {
	return projector.Deployment{
		DeploymentRecorded: schemas.DeploymentRecorded{
			Resource:     schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: name, Generation: 1},
			DeploymentID: cluster + "/" + name + "/" + finished.Format(time.RFC3339), Revision: "4f2a9c1",
			Phase: phase, StartedAt: finished.Add(-took), FinishedAt: finished, Project: project,
			Labels: map[string]string{"team": project}},
		EventID: "ev-dep-" + finished.Format("0102150405"),
	}
}

// selfHeal makes d a self-heal: a sync of the revision deployed before.
func selfHeal(d projector.Deployment) projector.Deployment {
	d.PreviousRevision, d.Initiator, d.Unchanged = d.Revision, "automated", true
	return d
}

// audit returns five entries chained per partition, oldest first, as
// stored, and as read with the actors of config changes joined in (they are
// not part of the chain).
func audit() ([]projector.AuditEntry, []projector.AuditRow) {
	now := Now()
	rows := []projector.AuditRow{
		{AuditEntry: projector.AuditEntry{Topic: "argosy.config", Partition: 0, Offset: 10, At: now.Add(-72 * time.Hour),
			EventID: "ev-reg-eu", Type: "io.argosy.config.cluster.registered.v1", Cluster: "prod-eu", Kind: "clusters",
			Name: "prod-eu", Actor: "alice"}},
		{AuditEntry: projector.AuditEntry{Topic: "argosy.config", Partition: 0, Offset: 11, At: now.Add(-2 * time.Hour),
			EventID: "ev-guestbook", Type: "io.argosy.config.application.upserted.v1", Cluster: "prod-eu",
			Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "guestbook", Generation: 3, Actor: "alice",
			Before: json.RawMessage(`{"project":"web","rev":"1"}`), After: json.RawMessage(`{"project":"web","rev":"2"}`)},
			Results: []projector.Ack{{EventID: "ev-guestbook", Cluster: "prod-eu", Applied: true, At: now.Add(-2*time.Hour + time.Second)}}},
		{AuditEntry: projector.AuditEntry{Topic: "argosy.config", Partition: 0, Offset: 12, At: now.Add(-time.Hour),
			EventID: "ev-billing-5", Type: "io.argosy.config.application.upserted.v1", Cluster: "prod-eu",
			Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "billing", Generation: 5, Actor: "bob",
			After: json.RawMessage(`{"project":"payments"}`)},
			Results: []projector.Ack{{EventID: "ev-billing-5", Cluster: "prod-eu", Code: schemas.RejectInvalid,
				Reason: "spec.source.repoURL is empty", At: now.Add(-time.Hour + time.Second)}}},
		{AuditEntry: projector.AuditEntry{Topic: "argosy.config", Partition: 1, Offset: 4, At: now.Add(-30 * time.Minute),
			EventID: "ev-guestbook-us", Type: "io.argosy.config.application.upserted.v1", Cluster: "prod-us",
			Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "guestbook", Generation: 2, Actor: "carol",
			After: json.RawMessage(`{"project":"web"}`)}},
		{AuditEntry: projector.AuditEntry{Topic: "argosy.audit", Partition: 0, Offset: 0, At: now.Add(-61 * time.Minute),
			EventID: "ev-call-1", Type: "io.argosy.hub.audit.recorded.v1", Cluster: "prod-eu", Kind: "api",
			Name: "applications.upsert", Actor: "bob", After: json.RawMessage(`{"outcome":"allowed"}`)}},
	}
	heads := map[projector.Partition]string{}
	stored := make([]projector.AuditEntry, len(rows))
	for i := range rows {
		e := &rows[i].AuditEntry
		s := *e
		if s.Kind != "api" {
			s.Actor = "" // joined at read time from the API call
		}
		p := projector.Partition{Topic: e.Topic, Partition: e.Partition}
		s.PrevHash = heads[p]
		s.Hash = ChainHash(s.PrevHash, s)
		e.PrevHash, e.Hash = s.PrevHash, s.Hash
		heads[p] = s.Hash
		stored[i] = s
	}
	return stored, rows
}

// ChainHash is projector.Chain for fixtures whose before and after are
// known to be JSON: should Chain fail all the same, the hash is empty,
// and every check finds the chain broken there.
func ChainHash(prev string, e projector.AuditEntry) string {
	h, err := projector.Chain(prev, e)
	if err != nil {
		return ""
	}
	return h
}
