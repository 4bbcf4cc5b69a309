package read

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// The audit timeline's bounds: how many actions one answer lists by
// default and at most, and how many of the newest matching entries it
// folds them from.
const (
	DefaultTimelineLimit = 50
	MaxTimelineLimit     = 500
	TimelineScan         = 5000
)

// Action is one entry of the audit timeline: one caller's action with
// every audit entry it wrote folded in. A placement change is one action
// from its author's call to the last cluster the hub placed it on; any
// other call is one action with the changes it appended, on however many
// clusters. A refused replay, and an entry no call is known for, is an
// action of its own.
type Action struct {
	// At is the log time of the action's newest entry.
	At time.Time `json:"at"`
	// Actor is who acted: for a placement change, its author, also where
	// the hub placed it (Via).
	Actor string `json:"actor,omitempty"`
	Via   string `json:"via,omitempty"`
	// Action is the call's authorization action (placements.apply,
	// applications.upsert, …), the author's for a placement change; empty
	// when no call of the action is among the entries.
	Action string `json:"action,omitempty"`
	// Outcome is the call's: allowed, denied or failed; refused for a
	// replay the fold refused.
	Outcome   string                `json:"outcome,omitempty"`
	RequestID string                `json:"requestId,omitempty"`
	Placement *schemas.PlacementRef `json:"placement,omitempty"`
	// Type, Kind, Namespace, Name and Generation are those of the newest
	// change (of the call, if the action changed nothing).
	Type       string `json:"type"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Clusters is how many clusters the action's changes are about.
	Clusters int `json:"clusters"`
	// Results counts the changes by what their clusters made of them.
	Results Tally `json:"results"`
	// Before and After are the newest change's spec around it: a
	// placement's Applications carry one spec, shown once.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Entries are every entry folded in, newest first, without their
	// specs (Before and After have the newest change's).
	Entries []projector.AuditRow `json:"entries"`
}

// Tally counts an action's changes by their clusters' acknowledgements:
// applied, rejected (failed), none yet (pending), or refused as a replay.
type Tally struct {
	Applied int `json:"applied"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	Refused int `json:"refused,omitempty"`
}

// TimelineFilter selects the timeline's actions: Reads keeps the calls
// that were allowed and changed nothing (reads, logins, dry runs), which
// it leaves out by default; refusals are always in.
type TimelineFilter struct {
	projector.AuditFilter
	Reads bool
}

// Timeline returns the newest f.Limit actions of the entries that match f,
// newest first, folded from the newest TimelineScan entries: the oldest
// action may be missing entries older than those.
func Timeline(ctx context.Context, q projector.Query, f TimelineFilter) ([]Action, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultTimelineLimit
	}
	af := f.AuditFilter
	af.Limit, af.Changes = TimelineScan, !f.Reads
	rows, err := q.Audit(ctx, af)
	if err != nil {
		return nil, fmt.Errorf("audit timeline: %w", err)
	}
	return Fold(rows, limit), nil
}

// Fold folds audit rows, newest first, into at most limit actions, newest
// first.
func Fold(rows []projector.AuditRow, limit int) []Action {
	var out []*Action
	byKey := map[string]*Action{}
	for _, r := range rows {
		k := actionKey(r)
		a, ok := byKey[k]
		if !ok {
			if len(out) == limit {
				continue
			}
			a = &Action{At: r.At}
			byKey[k] = a
			out = append(out, a)
		}
		a.add(r)
	}
	actions := make([]Action, len(out))
	for i, a := range out {
		a.finish()
		actions[i] = *a
	}
	return actions
}

// actionKey is what links the entries of one action: the placement change
// they made or carried out, else the request that appended them. A
// refused replay is no part of the call whose event it copies.
func actionKey(r projector.AuditRow) string {
	switch {
	case r.Refused != "":
	case r.Placement != nil:
		return fmt.Sprintf("placement %s/%s %d", r.Placement.Namespace, r.Placement.Name, r.Placement.Generation)
	case r.RequestID != "":
		return "request " + r.RequestID
	}
	return fmt.Sprintf("entry %s %d %d", r.Topic, r.Partition, r.Offset)
}

// isCall reports whether r is an API call's own record.
func isCall(r projector.AuditRow) bool { return r.Kind == "api" }

// add folds r, the next older entry of the action, in.
func (a *Action) add(r projector.AuditRow) {
	if a.Actor == "" || (a.Via != "" && r.Via == "" && r.Actor != "") {
		a.Actor, a.Via = r.Actor, r.Via
	}
	if a.RequestID == "" || (isCall(r) && r.Via == "") {
		a.RequestID = r.RequestID
	}
	if a.Placement == nil {
		a.Placement = r.Placement
	}
	if r.Refused != "" {
		a.Outcome = "refused"
	}
	if isCall(r) && (a.Action == "" || r.Via == "") {
		a.Action = r.Name
		if a.Outcome != "refused" {
			a.Outcome = callOutcome(r.After)
		}
	}
	// What the action is about: its newest change, else its call.
	if a.Type == "" || (a.Kind == "api" && !isCall(r)) {
		a.Type, a.Kind, a.Namespace, a.Name, a.Generation = r.Type, r.Kind, r.Namespace, r.Name, r.Generation
		if !isCall(r) {
			a.Before, a.After = r.Before, r.After
		}
	}
	if !isCall(r) {
		r.Before, r.After = nil, nil
		a.Results.count(r)
	}
	a.Entries = append(a.Entries, r)
}

// finish counts the clusters of the action's changes.
func (a *Action) finish() {
	seen := map[string]bool{}
	for _, e := range a.Entries {
		if !isCall(e) && e.Cluster != "" {
			seen[e.Cluster] = true
		}
	}
	a.Clusters = len(seen)
}

// count adds a change to the tally: a cluster's rejection fails it,
// otherwise an acknowledgement applies it.
func (t *Tally) count(r projector.AuditRow) {
	if r.Refused != "" {
		t.Refused++
		return
	}
	if !acknowledged(r.Kind) {
		return
	}
	switch {
	case len(r.Results) == 0:
		t.Pending++
	case allApplied(r.Results):
		t.Applied++
	default:
		t.Failed++
	}
}

// acknowledged reports whether the clusters acknowledge changes of kind.
func acknowledged(kind string) bool {
	switch kind {
	case schemas.SubjectApplications, schemas.SubjectAppProjects, schemas.SubjectRepositories:
		return true
	}
	return false
}

func allApplied(acks []projector.Ack) bool {
	for _, a := range acks {
		if !a.Applied {
			return false
		}
	}
	return true
}

// callOutcome is the outcome an API call's record states.
func callOutcome(record json.RawMessage) string {
	var rec struct {
		Outcome string `json:"outcome"`
	}
	if json.Unmarshal(record, &rec) != nil {
		return ""
	}
	return rec.Outcome
}
