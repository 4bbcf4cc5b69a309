package hub

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// TestLedgerForgetsPastTheWindow checks that what the ledger keeps for
// idempotency, the ids written and the keys' requests, does not grow with
// time: past the window both are forgotten, within it both are kept.
func TestLedgerForgetsPastTheWindow(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	l := newLedger(events.DefaultTopics(""), nil, time.Hour, slog.New(slog.DiscardHandler))
	l.ids["old"] = written{at: now.Add(-2 * time.Hour)}
	l.ids["new"] = written{at: now.Add(-time.Minute)}
	l.requests["old"] = keyUse{digest: "a", at: now.Add(-2 * time.Hour)}
	l.requests["new"] = keyUse{digest: "b", at: now.Add(-time.Minute)}
	l.pruneIDs(now)
	if _, ok := l.ids["old"]; ok || len(l.ids) != 1 {
		t.Errorf("ids after pruning: %v, want only the one within the window", l.ids)
	}
	if _, ok := l.requests["old"]; ok || len(l.requests) != 1 {
		t.Errorf("requests after pruning: %v, want only the one within the window", l.requests)
	}
}

// TestLedgerKeepsADeletedObjectsProject: the entry a delete leaves keeps
// the object's project whether the ledger folds it from the write or reads
// it back from the log (whose delete event names no project), so that
// the hub tells the same of a deleted Application before and after it
// reads its own write back.
func TestLedgerKeepsADeletedObjectsProject(t *testing.T) {
	l := newLedger(events.DefaultTopics(""), nil, time.Hour, slog.New(slog.DiscardHandler))
	const key = "prod-us/applications/argocd/old"
	l.put(key, &entry{generation: 2, project: "web"})
	e := event.New()
	e.SetID("delete-old")
	d := &events.Decoded{Event: &e, Spec: events.Spec{Type: events.TypeApplicationDeleted},
		Data: &schemas.ApplicationDeleted{Resource: schemas.Resource{Cluster: "prod-us", Namespace: "argocd", Name: "old", Generation: 3}}}
	l.put(key, entryOf(d, 7))
	got, ok := l.objects[key]
	if !ok || !got.deleted || got.generation != 3 || got.project != "web" {
		t.Fatalf("after the delete is read back: %+v, want deleted at generation 3 in project web", got)
	}
}

// TestLedgerPrunesRarely: the walk over every id and key that forgets
// those past the window runs at most every pruneEvery, not after every
// poll of the log (at 2,000 clusters it was a third of the hub's CPU), and
// the window is kept exactly all the same: a lookup does not find what
// is past it, pruned yet or not.
func TestLedgerPrunesRarely(t *testing.T) {
	now := time.Now()
	l := newLedger(events.DefaultTopics(""), nil, time.Hour, slog.New(slog.DiscardHandler))
	l.prune(now)
	l.ids["old"] = written{at: now.Add(-2 * time.Hour)}
	l.requests["old"] = keyUse{digest: "a", at: now.Add(-2 * time.Hour)}
	l.ids["new"] = written{at: now.Add(-time.Minute)}
	l.prune(now.Add(time.Second))
	if _, ok := l.ids["old"]; !ok {
		t.Error("pruned again a second after the last pruning")
	}
	if _, ok := l.lookupID("old"); ok {
		t.Error("an id past the window was found before its pruning")
	}
	if _, ok := l.request("old"); ok {
		t.Error("a key past the window was found before its pruning")
	}
	if _, ok := l.lookupID("new"); !ok {
		t.Error("an id within the window was not found")
	}
	l.prune(now.Add(pruneEvery))
	if _, ok := l.ids["old"]; ok || len(l.ids) != 1 || len(l.requests) != 0 {
		t.Errorf("after pruneEvery: ids %v, keys %v; want only the one within the window", l.ids, l.requests)
	}
}

// TestLedgerReusesAKeyPastTheWindow: a key used again after its first use
// fell out of the window, before the ledger pruned it, counts from its
// new use, which the next pruning keeps.
func TestLedgerReusesAKeyPastTheWindow(t *testing.T) {
	now := time.Now()
	l := newLedger(events.DefaultTopics(""), nil, time.Hour, slog.New(slog.DiscardHandler))
	l.requests["k"] = keyUse{digest: "first", at: now.Add(-2 * time.Hour)}
	e := event.New()
	e.SetExtension(events.ExtIdempotencyKey, "k")
	e.SetExtension(events.ExtRequestDigest, "second")
	l.noteRequest(&e, now)
	l.pruneIDs(now)
	if d, ok := l.request("k"); !ok || d != "second" {
		t.Fatalf("key k after its reuse: %q, %v; want the second request's digest", d, ok)
	}
}
