package projector

import (
	"fmt"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// OperationMaxAge is the replay rule's bound on an operation's age,
// events.OperationMaxAge.
const OperationMaxAge = events.OperationMaxAge

// OperationExpiry is when an operation.requested signed at signed stops
// being wanted by the replay rule (events.OperationExpiry with
// OperationMaxAge). One appended after it is a replay.
func OperationExpiry(signed time.Time, p *schemas.OperationRequested) time.Time {
	return events.OperationExpiry(signed, p, OperationMaxAge)
}

// Replay returns why d is a replay that the fold refuses, or "" when it is
// not: the rule of docs/design.md ("Replays"), decided from the log alone,
// so that a live view, a rebuild and an as-of answer refuse the same
// records. A replay is
//   - an upsert or a deletion of an Application, an AppProject or a
//     repository, or a cluster's registration or deregistration, whose
//     generation is not newer than the last one the view took for the
//     same object, deleted or not (the hub gives every change of an
//     object a newer generation, across deletion and re-creation);
//   - an operation.requested appended after its expiry
//     (OperationExpiry), or whose request id the view has taken before.
//
// The rows Needs(d) names must be in the view.
func (v *View) Replay(d *events.Decoded) string {
	switch p := d.Data.(type) {
	case *schemas.ApplicationUpserted, *schemas.ApplicationDeleted:
		cur, ok := v.rows.Desired[appKey(d)]
		if !ok || cur.EventID == "" {
			return ""
		}
		return notNewer(generationOf(d), cur.Generation, cur.Deleted, cur.EventID)
	case *schemas.AppProjectUpserted, *schemas.AppProjectDeleted, *schemas.RepositoryUpserted, *schemas.RepositoryDeleted,
		*schemas.ClusterRegistered, *schemas.ClusterDeregistered:
		cur, ok := v.rows.Objects[objectKey(d)]
		if !ok || cur.EventID == "" {
			return ""
		}
		return notNewer(generationOf(d), cur.Generation, cur.Deleted, cur.EventID)
	case *schemas.OperationRequested:
		if expires := OperationExpiry(d.Event.Time(), p); d.LogTime.After(expires) {
			return fmt.Sprintf("expired: appended at %s, after its expiry at %s", d.LogTime.UTC().Format(time.RFC3339Nano),
				expires.UTC().Format(time.RFC3339))
		}
		if seen, ok := v.rows.Operations[p.RequestID]; ok && seen.RequestID != "" {
			return fmt.Sprintf("request %s was taken before, from event %s at partition %d, offset %d",
				p.RequestID, seen.EventID, seen.Partition, seen.Offset)
		}
	}
	return ""
}

// notNewer is the reason an event of generation gen is refused when its
// object is at generation at (deleted or not) from event id, or "".
func notNewer(gen, at int64, deleted bool, id string) string {
	if gen > at {
		return ""
	}
	state := ""
	if deleted {
		state = ", deleted"
	}
	return fmt.Sprintf("generation %d is not newer than the object's generation %d%s (event %s)", gen, at, state, id)
}

// generationOf is the generation a config event's payload carries (0 for
// one that carries none).
func generationOf(d *events.Decoded) int64 {
	if o, ok := d.Data.(interface{ Object() schemas.Resource }); ok {
		return o.Object().Generation
	}
	return 0
}

// refuse records d, a replay, in the audit with the reason, and changes
// nothing else: no before or after, since nothing changed.
func (v *View) refuse(d *events.Decoded, reason string) error {
	e := v.entry(d)
	e.Generation, e.Refused = generationOf(d), reason
	return v.chain(e)
}
