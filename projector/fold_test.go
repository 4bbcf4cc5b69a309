package projector_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

var t0 = time.Date(2026, time.May, 4, 9, 0, 0, 123456789, time.UTC)

// logOf builds decoded events on their topics, partitions and offsets.
type logOf struct {
	next map[string]int64
	recs []*events.Decoded
}

func (l *logOf) add(topic string, part int32, typ string, subj events.Subject, data any) *events.Decoded {
	if l.next == nil {
		l.next = map[string]int64{}
	}
	key := fmt.Sprintf("%s/%d", topic, part)
	off := l.next[key]
	l.next[key]++
	e := event.New()
	e.SetID(fmt.Sprintf("%s-%d", key, off))
	e.SetType(typ)
	logTime := t0.Add(time.Duration(len(l.recs)) * time.Second)
	e.SetTime(logTime.Truncate(time.Second)) // signed in whole seconds, just before its append
	sp, _ := events.Lookup(typ)
	d := &events.Decoded{Event: &e, Spec: sp, Data: data, Subject: subj, LogTime: logTime,
		Topic: topic, Partition: part, Offset: off}
	l.recs = append(l.recs, d)
	return d
}

func app(name string) events.Subject {
	return events.Subject{Cluster: "c1", Kind: "applications", Namespace: "argocd", Name: name}
}

// fleetLog is a small fleet's history: config on one partition, status on
// another, deployments and API calls on theirs.
func fleetLog() *logOf {
	l := &logOf{}
	res := func(name string, gen int64) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: gen}
	}
	spec := func(rev string) json.RawMessage {
		return json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example.com/r.git","targetRevision":"` + rev + `"}}`)
	}
	l.add("config", 0, events.TypeClusterRegistered, events.Subject{Cluster: "c1"}, &schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: "c1", Name: "c1"}, Labels: map[string]string{"env": "prod"}})
	up1 := l.add("config", 0, events.TypeApplicationUpserted, app("web"), &schemas.ApplicationUpserted{Resource: res("web", 1), Project: "default", Spec: spec("v1")})
	// The acknowledgement of generation 2 may come before its change on
	// another topic: here the status partition holds it early.
	l.add("status", 1, events.TypeConfigApplied, app("web"), &schemas.ConfigApplied{Resource: res("web", 1), EventID: up1.Event.ID()})
	up2 := l.add("config", 0, events.TypeApplicationUpserted, app("web"), &schemas.ApplicationUpserted{Resource: res("web", 2), Project: "default", Spec: spec("v2")})
	l.add("status", 1, events.TypeConfigApplied, app("web"), &schemas.ConfigApplied{Resource: res("web", 2), EventID: up2.Event.ID()})
	l.add("status", 1, events.TypeApplicationStatus, app("web"), &schemas.ApplicationStatusChanged{Resource: res("web", 2), Seq: 1, Full: true,
		Sync: &schemas.SyncStatus{Status: "OutOfSync"}, Health: &schemas.HealthStatus{Status: "Progressing"}})
	l.add("status", 1, events.TypeApplicationStatus, app("web"), &schemas.ApplicationStatusChanged{Resource: res("web", 2), Seq: 2,
		Sync: &schemas.SyncStatus{Status: "Synced", Revision: "abc"}})
	l.add("status", 1, events.TypeHeartbeat, events.Subject{Cluster: "c1"}, &schemas.Heartbeat{Cluster: "c1", AgentVersion: "v1", Mode: "managed", Seq: 7, Applications: 1})
	l.add("config", 0, events.TypeApplicationUpserted, app("api"), &schemas.ApplicationUpserted{Resource: res("api", 1), Project: "default", Spec: spec("v1")})
	rej := l.add("config", 0, events.TypeApplicationUpserted, app("api"), &schemas.ApplicationUpserted{Resource: res("api", 2), Project: "default", Spec: spec("bad")})
	l.add("status", 1, events.TypeConfigRejected, app("api"), &schemas.ConfigRejected{Resource: res("api", 2), EventID: rej.Event.ID(), Code: schemas.RejectApplyFailed, Reason: "invalid"})
	l.add("config", 0, events.TypeApplicationDeleted, app("web"), &schemas.ApplicationDeleted{Resource: res("web", 3)})
	l.add("deployments", 0, events.TypeDeploymentRecorded, app("web"), &schemas.DeploymentRecorded{Resource: res("web", 2), DeploymentID: "u/0",
		Revision: "abc", Phase: "Succeeded", StartedAt: t0, FinishedAt: t0.Add(time.Minute)})
	l.add("audit", 0, events.TypeAuditRecorded, events.Subject{Cluster: "c1"}, &schemas.AuditRecorded{RequestID: "r1", Actor: "alice", Action: "applications.update",
		Method: "PUT", Path: "/x", Cluster: "c1", Outcome: "allowed", StatusCode: 200, EventIDs: []string{up2.Event.ID()}})
	return l
}

// fold folds events into a fresh view one step each and returns everything
// the steps wrote, as a store would hold it.
func fold(t *testing.T, recs []*events.Decoded) *projector.Batch {
	t.Helper()
	v := projector.NewView()
	all := &projector.Batch{}
	for _, d := range recs {
		if err := projector.Apply(v, d); err != nil {
			t.Fatal(err)
		}
		b := v.Flush()
		all.Registrations = upsert(all.Registrations, b.Registrations, func(r projector.ClusterRegistration) string { return r.Cluster })
		all.Beats = upsert(all.Beats, b.Beats, func(r projector.ClusterBeat) string { return r.Cluster })
		all.Desired = upsert(all.Desired, b.Desired, func(r projector.AppDesired) string { return fmt.Sprint(r.AppKey) })
		all.Observed = upsert(all.Observed, b.Observed, func(r projector.AppObserved) string { return fmt.Sprint(r.AppKey) })
		all.Objects = upsert(all.Objects, b.Objects, func(r projector.ObjectGeneration) string { return fmt.Sprint(r.ObjectKey) })
		all.Operations = upsert(all.Operations, b.Operations, func(r projector.Operation) string { return r.RequestID })
		all.Acks = append(all.Acks, b.Acks...)
		all.Calls = append(all.Calls, b.Calls...)
		all.Audit = append(all.Audit, b.Audit...)
		all.Deployments = append(all.Deployments, b.Deployments...)
		all.Targets = append(all.Targets, b.Targets...)
		all.Health = append(all.Health, b.Health...)
	}
	slices.SortFunc(all.Audit, func(a, b projector.AuditEntry) int {
		return cmpKey(fmt.Sprintf("%s/%d/%09d", a.Topic, a.Partition, a.Offset), fmt.Sprintf("%s/%d/%09d", b.Topic, b.Partition, b.Offset))
	})
	slices.SortFunc(all.Acks, func(a, b projector.Ack) int { return cmpKey(a.EventID, b.EventID) })
	return all
}

func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func upsert[T any](rows, changed []T, key func(T) string) []T {
	for _, c := range changed {
		i := slices.IndexFunc(rows, func(r T) bool { return key(r) == key(c) })
		if i >= 0 {
			rows[i] = c
		} else {
			rows = append(rows, c)
		}
	}
	slices.SortFunc(rows, func(a, b T) int { return cmpKey(key(a), key(b)) })
	return rows
}

// TestFoldIgnoresInterleaving folds the same log in many interleavings of
// its partitions (each partition in order) and gets the same views.
func TestFoldIgnoresInterleaving(t *testing.T) {
	l := fleetLog()
	want := fold(t, l.recs)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		got := fold(t, shuffleKeepingPartitions(rng, l.recs))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("interleaving %d gives other views (-want +got):\n%s", i, diff)
		}
	}
	// And the views say what the log says.
	web := want.Desired[slices.IndexFunc(want.Desired, func(a projector.AppDesired) bool { return a.Name == "web" })]
	if !web.Deleted || web.Generation != 3 {
		t.Errorf("web desired %+v, want deleted at generation 3", web)
	}
	obs := want.Observed[slices.IndexFunc(want.Observed, func(a projector.AppObserved) bool { return a.Name == "web" })]
	if obs.AppliedGeneration != 2 || obs.Sync.Status != "Synced" || obs.Health.Status != "Progressing" || obs.Seq != 2 {
		t.Errorf("web observed %+v", obs)
	}
	api := want.Observed[slices.IndexFunc(want.Observed, func(a projector.AppObserved) bool { return a.Name == "api" })]
	if api.Rejected == nil || api.Rejected.Generation != 2 || api.Rejected.Code != schemas.RejectApplyFailed {
		t.Errorf("api observed %+v, want generation 2 rejected", api)
	}
	// Config: a registration, four upserts and a deletion; audit: one call.
	if len(want.Audit) != 7 {
		t.Errorf("%d audit entries, want 7", len(want.Audit))
	}
}

func shuffleKeepingPartitions(rng *rand.Rand, recs []*events.Decoded) []*events.Decoded {
	queues := map[string][]*events.Decoded{}
	var keys []string
	for _, d := range recs {
		k := fmt.Sprintf("%s/%d", d.Topic, d.Partition)
		if _, ok := queues[k]; !ok {
			keys = append(keys, k)
		}
		queues[k] = append(queues[k], d)
	}
	var out []*events.Decoded
	for len(out) < len(recs) {
		k := keys[rng.IntN(len(keys))]
		if q := queues[k]; len(q) > 0 {
			out, queues[k] = append(out, q[0]), q[1:]
		}
	}
	return out
}

// TestAuditChain checks that the chain of a fold verifies, and that a
// changed, removed or reordered entry is found, at the right place.
func TestAuditChain(t *testing.T) {
	b := fold(t, fleetLog().recs)
	var config []projector.AuditEntry
	for _, e := range b.Audit {
		if e.Topic == "config" {
			config = append(config, e)
		}
	}
	if len(config) < 4 {
		t.Fatalf("%d config audit entries", len(config))
	}
	if br := projector.Verify(config); br != nil {
		t.Fatalf("an untouched chain breaks: %+v", br)
	}
	tests := []struct {
		name   string
		tamper func([]projector.AuditEntry) []projector.AuditEntry
		offset int64
	}{
		{"changed after", func(es []projector.AuditEntry) []projector.AuditEntry {
			es[2].After = json.RawMessage(`{"project":"evil"}`)
			return es
		}, config[2].Offset},
		{"changed actor", func(es []projector.AuditEntry) []projector.AuditEntry { es[1].Actor = "mallory"; return es }, config[1].Offset},
		{"removed", func(es []projector.AuditEntry) []projector.AuditEntry { return slices.Delete(es, 1, 2) }, config[2].Offset},
		{"swapped", func(es []projector.AuditEntry) []projector.AuditEntry {
			es[1], es[2] = es[2], es[1]
			return es
		}, config[2].Offset}, // the first misplaced entry holds offset 2
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := tc.tamper(slices.Clone(config))
			br := projector.Verify(es)
			if br == nil || br.Offset != tc.offset {
				t.Errorf("broken link %+v, want at offset %d", br, tc.offset)
			}
		})
	}
}

// TestChainCheckableFromDocs runs the Python script of docs/projector.md
// against the read API serving the chains a fold wrote, with an
// operation.requested and an API call whose stored fields are not in
// sorted order, text that JSON writers escape differently, and a refused
// replay: an outsider can check our chains with it, and it finds a changed
// entry.
func TestChainCheckableFromDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/projector.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/projector.md has no python block")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to check the documented script: %v", err)
	}
	l := fleetLog()
	op := l.add("config", 0, events.TypeOperationRequested, app("web"), &schemas.OperationRequested{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 2},
		RequestID: "r2", Operation: "sync", Revision: "v2 <&>", Prune: true})
	l.again(op, time.Minute)
	l.add("audit", 0, events.TypeAuditRecorded, events.Subject{}, &schemas.AuditRecorded{RequestID: "r3", Actor: "bob",
		Action: "placements.apply", Method: "POST", Path: "/api/v1/placements?dryRun=false&x=<1>", Outcome: "allowed", StatusCode: 200})
	entries := fold(t, l.recs).Audit
	run := func(entries []projector.AuditEntry) (string, error) {
		srv := httptest.NewServer(read.New(&readtest.Query{Entries: entries}))
		defer srv.Close()
		out, err := exec.Command(python, "-c", script, srv.URL).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(entries); err != nil || !strings.HasPrefix(out, "ok") {
		t.Fatalf("the documented script rejects a good chain: %v: %s", err, out)
	}
	for i, e := range entries {
		if e.Type != events.TypeOperationRequested {
			continue
		}
		tampered := slices.Clone(entries)
		tampered[i].After = json.RawMessage(strings.Replace(string(e.After), `"sync"`, `"terminate"`, 1))
		if e.Refused != "" {
			tampered[i].Refused = "" // a replay passed off as a request
		}
		if out, err := run(tampered); err == nil || !strings.Contains(out, fmt.Sprintf("at offset %d", e.Offset)) {
			t.Fatalf("the documented script accepts a changed %s: %v: %s", e.Type, err, out)
		}
	}
}

// TestAdvanceNeverMovesBack: a step folds its records after dead-lettering
// the bad ones, so a later rejected record must not be undone by an earlier
// folded one.
func TestAdvanceNeverMovesBack(t *testing.T) {
	v := projector.NewView()
	v.Advance("status", 1, 7) // dead-lettered
	v.Advance("status", 1, 3) // folded afterwards, but earlier in the log
	v.Advance("status", 2, 4)
	got := v.Flush().Offsets
	want := map[projector.Partition]int64{{Topic: "status", Partition: 1}: 8, {Topic: "status", Partition: 2}: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("offsets (-want +got):\n%s", diff)
	}
}

// TestStatusDeltaMovesAppliedGeneration: a status delta names the
// generation its cluster applied, so a view that never saw the
// acknowledgement (it aged out of the status topic) still has it, and a
// rejection of an older generation no longer shows.
func TestStatusDeltaMovesAppliedGeneration(t *testing.T) {
	l := &logOf{}
	res := func(gen int64) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: gen}
	}
	l.add("status", 1, events.TypeConfigRejected, app("web"), &schemas.ConfigRejected{Resource: res(2), EventID: "e2", Code: schemas.RejectApplyFailed})
	l.add("status", 1, events.TypeApplicationStatus, app("web"), &schemas.ApplicationStatusChanged{Resource: res(3), Seq: 9, Full: true,
		Health: &schemas.HealthStatus{Status: "Healthy"}})
	l.add("status", 1, events.TypeApplicationStatus, app("web"), &schemas.ApplicationStatusChanged{Resource: res(1), Seq: 10,
		Health: &schemas.HealthStatus{Status: "Degraded"}}) // an older generation never moves it back
	v := projector.NewView()
	for _, d := range l.recs {
		if err := projector.Apply(v, d); err != nil {
			t.Fatal(err)
		}
	}
	got := v.Flush().Observed
	if len(got) != 1 || got[0].AppliedGeneration != 3 || got[0].Rejected != nil || got[0].Health.Status != "Degraded" {
		t.Errorf("observed %+v, want applied generation 3, no rejection, health Degraded", got)
	}
}

// TestPublishedApplicationUntilAdopted: what a cluster publishes of an
// Application it owns shows as the observed row's Local, the newest
// publication winning, until the hub's first change to it is applied.
func TestPublishedApplicationUntilAdopted(t *testing.T) {
	l := &logOf{}
	res := func(gen int64) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: gen}
	}
	l.add("status", 1, events.TypeApplicationPublished, app("web"), &schemas.ApplicationPublished{Resource: res(1), Project: "default",
		Spec: json.RawMessage(`{"project": "default", "source": {"path": "one"}}`)})
	l.add("status", 1, events.TypeApplicationPublished, app("web"), &schemas.ApplicationPublished{Resource: res(2), Project: "team",
		Labels: map[string]string{"team": "edge"}, Spec: json.RawMessage(`{"project":"team","source":{"path":"two"}}`)})
	v := projector.NewView()
	fold := func() []projector.AppObserved {
		t.Helper()
		for _, d := range l.recs {
			if err := projector.Apply(v, d); err != nil {
				t.Fatal(err)
			}
		}
		l.recs = nil
		return v.Flush().Observed
	}
	got := fold()
	if len(got) != 1 || got[0].Local == nil || got[0].Local.Project != "team" || got[0].Local.Generation != 2 ||
		string(got[0].Local.Spec) != `{"project":"team","source":{"path":"two"}}` || got[0].Local.Labels["team"] != "edge" {
		t.Fatalf("observed %+v: want the second publication as Local", got)
	}
	l.add("status", 1, events.TypeConfigApplied, app("web"), &schemas.ConfigApplied{Resource: res(3), EventID: "adopt"})
	if got := fold(); len(got) != 1 || got[0].Local != nil || got[0].AppliedGeneration != 3 {
		t.Errorf("observed %+v: want no Local once the hub's generation 3 is applied", got)
	}
}

// TestPlacementUpsertIsATarget: an Application a placement wrote (its
// labels name the placement and its generation) is one target of that
// placement change; one the hub wrote directly, or with a label that is no
// generation, is none.
func TestPlacementUpsertIsATarget(t *testing.T) {
	l := &logOf{}
	up := func(name string, gen int64, labels map[string]string) *events.Decoded {
		return l.add("config", 0, events.TypeApplicationUpserted, app(name), &schemas.ApplicationUpserted{
			Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: gen},
			Project:  "default", Labels: labels, Spec: json.RawMessage(`{"project":"default"}`)})
	}
	placed := up("web", 4, map[string]string{schemas.LabelPlacement: "web", schemas.LabelPlacementGeneration: "2", "team": "a"})
	up("api", 1, map[string]string{"team": "a"})
	up("odd", 1, map[string]string{schemas.LabelPlacement: "odd", schemas.LabelPlacementGeneration: "two"})
	got := fold(t, l.recs).Targets
	want := []projector.Target{{AppKey: projector.AppKey{Cluster: "c1", Namespace: "argocd", Name: "web"}, Placement: "web",
		PlacementGeneration: 2, Generation: 4, EventID: placed.Event.ID(), At: placed.LogTime}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got)\n%s", diff)
	}
}

// TestHealthChanges: an Application turning Degraded, or Healthy from any
// other health, is a health change at its status's log time; the same
// health again, other healths, and a deletion are not.
func TestHealthChanges(t *testing.T) {
	l := &logOf{}
	st := func(seq int64, full bool, health string) *events.Decoded {
		p := &schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1},
			Seq: seq, Full: full}
		if health != "" {
			p.Health = &schemas.HealthStatus{Status: health}
		}
		return l.add("status", 0, events.TypeApplicationStatus, app("web"), p)
	}
	st(1, true, "Progressing")
	healthy := st(2, false, "Healthy")
	st(3, true, "Healthy") // the same again, in full
	st(4, false, "")       // no health in the delta
	degraded := st(5, false, "Degraded")
	st(6, false, "Degraded")
	st(7, false, "Progressing")
	back := st(8, false, "Healthy")
	l.add("status", 0, events.TypeApplicationStatus, app("web"), &schemas.ApplicationStatusChanged{
		Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web"}, Seq: 9, Deleted: true})
	var got []string
	for _, h := range fold(t, l.recs).Health {
		got = append(got, h.Health+"@"+h.EventID)
	}
	want := []string{"Healthy@" + healthy.Event.ID(), "Degraded@" + degraded.Event.ID(), "Healthy@" + back.Event.ID()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("health changes (-want +got)\n%s", diff)
	}
}

// TestOperationResultEndsItsAcknowledgement folds a sync's acknowledgement,
// its end and the rejection of a copy of it: the last acknowledgement row
// of the request carries Argo CD's phase and message, which the audit
// history shows as its result.
func TestOperationResultEndsItsAcknowledgement(t *testing.T) {
	l := &logOf{}
	res := schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "web", Generation: 1}
	req := l.add("config", 0, events.TypeOperationRequested, app("web"), &schemas.OperationRequested{Resource: res, RequestID: "r1",
		Operation: schemas.OperationSync})
	l.add("status", 1, events.TypeConfigApplied, app("web"), &schemas.ConfigApplied{Resource: res, EventID: req.Event.ID()})
	l.add("status", 1, events.TypeOperationCompleted, app("web"), &schemas.OperationCompleted{Resource: res, EventID: req.Event.ID(),
		RequestID: "r1", Operation: schemas.OperationSync, Phase: schemas.OperationPhaseFailed, Message: "one or more objects failed to apply"})
	// A copy of the request, appended later, is refused as a replay: the
	// original's acknowledgement stands.
	l.add("status", 1, events.TypeConfigRejected, app("web"), &schemas.ConfigRejected{Resource: res, EventID: req.Event.ID(),
		Offset: 99, Code: schemas.RejectReplay, Reason: "a copy"})
	acks := fold(t, l.recs).Acks
	if len(acks) != 2 {
		t.Fatalf("acks %+v, want the acknowledgement and the result, and nothing of the copy", acks)
	}
	if last := acks[1]; !last.Applied || last.Result != schemas.OperationPhaseFailed || last.Reason != "one or more objects failed to apply" {
		t.Errorf("the last acknowledgement row %+v, want applied with Argo CD's phase and message", last)
	}
}

// TestBatchFoldsAsItsDeltasAlone: a batch of one cluster's deltas leaves
// the view as its deltas one event each would, and records each health
// change it holds under an id of its own.
func TestBatchFoldsAsItsDeltasAlone(t *testing.T) {
	res := func(name string) schemas.Resource {
		return schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: 1}
	}
	deltas := []schemas.ApplicationStatusChanged{
		{Resource: res("web"), Seq: 1, Full: true, Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: "Degraded"}},
		{Resource: res("api"), Seq: 1, Full: true, Sync: &schemas.SyncStatus{Status: "OutOfSync"}, Health: &schemas.HealthStatus{Status: "Healthy"}},
		{Resource: res("web"), Seq: 2, Health: &schemas.HealthStatus{Status: "Healthy"}},
	}
	alone, batched := &logOf{}, &logOf{}
	for i := range deltas {
		alone.add("status", 0, events.TypeApplicationStatus, app(deltas[i].Name), &deltas[i])
	}
	b := batched.add("status", 0, events.TypeApplicationStatusBatch, events.Subject{Cluster: "c1"},
		&schemas.ApplicationStatusBatch{Cluster: "c1", Deltas: deltas})

	want, got := fold(t, alone.recs), fold(t, batched.recs)
	ignore := cmpopts.IgnoreFields(projector.AppObserved{}, "UpdatedAt")
	if diff := cmp.Diff(want.Observed, got.Observed, ignore); diff != "" {
		t.Errorf("observed rows differ from the deltas folded alone (-alone +batch):\n%s", diff)
	}
	var ids []string
	for _, h := range got.Health {
		ids = append(ids, fmt.Sprintf("%s %s %s", h.Name, h.Health, h.EventID))
	}
	id := b.Event.ID()
	if wantIDs := []string{"web Degraded " + id + "#0", "api Healthy " + id + "#1", "web Healthy " + id + "#2"}; !slices.Equal(ids, wantIDs) {
		t.Errorf("health changes %q, want %q", ids, wantIDs)
	}
	if need := projector.Needs(b).Observed; len(need) != 3 || need[0].Name != "web" || need[1].Name != "api" || need[1].Cluster != "c1" {
		t.Errorf("Needs(batch).Observed = %v, want each delta's Application", need)
	}
}
