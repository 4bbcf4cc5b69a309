package hub

import (
	"log/slog"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
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
